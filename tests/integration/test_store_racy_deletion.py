"""An update that empties an object's last finalizer removes the object; when another
request removed it first (upstream's ``deleteWithoutFinalizers``: "deletion is racy"),
the update still answers 200 with the updated object, not 404. In process over a real
etcd; the other deleter is made to win the race by deleting the object just before the
update's own delete reaches storage."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from lab.etcd import EtcdCluster
from proxy.endpoints.context import API_CONTEXT
from proxy.options.settings import load_settings
from tests.integration.conftest import create
from tests.integration.in_process import in_process_server, wait_ready

pytestmark = pytest.mark.etcd

MERGE = {"Content-Type": "application/merge-patch+json"}


async def test_emptying_the_finalizers_of_an_object_another_deleter_removed_is_200(
    etcd: EtcdCluster, etcd_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = load_settings(
        [f"--etcd-servers={','.join(etcd.endpoints)}", f"--etcd-prefix={etcd_prefix}"]
    )
    async with in_process_server(settings) as server, aiohttp.ClientSession(
        base_url=server.url
    ) as http:
        await wait_ready(http)
        cms = "/api/v1/namespaces/default/configmaps"
        await create(http, cms, {"metadata": {"name": "held", "finalizers": ["example.com/x"]}})
        async with http.delete(f"{cms}/held") as resp:
            assert resp.status == 200  # kept by its finalizer, marked
        ctx = server.app[API_CONTEXT]
        configmaps = ctx.registry.lookup("", "configmaps")
        assert configmaps is not None
        storage = ctx.storages.for_resource(configmaps).store
        real_delete = storage.delete

        async def another_deleter_first(key: str, *args: Any, **kwargs: Any) -> Any:
            monkeypatch.setattr(storage, "delete", real_delete)  # once
            await real_delete(key)  # e.g. the namespace controller's next look
            return await real_delete(key, *args, **kwargs)

        monkeypatch.setattr(storage, "delete", another_deleter_first)
        unhold = {"metadata": {"finalizers": None}}
        async with http.patch(f"{cms}/held", json=unhold, headers=MERGE) as resp:
            body = await resp.json()
            assert resp.status == 200, body
        assert body["metadata"]["name"] == "held" and not body["metadata"].get("finalizers")
        async with http.get(f"{cms}/held") as resp:
            assert resp.status == 404
