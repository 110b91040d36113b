"""Post-start hooks and the loopback client on a real server over a real etcd: a hook
that dies of a bug is restarted while /readyz?verbose shows its check failing; the
server's own writes are audited as system:apiserver and carry managedFields; the
loopback client's update is retried on a conflict, as upstream's RetryOnConflict."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from lab.etcd import EtcdCluster
from proxy.apimachinery.wait import Backoff
from proxy.loopback.client import LoopbackClient, resource_path
from proxy.loopback.config import LoopbackConfig
from proxy.options.settings import load_settings
from proxy.server.certs import CertKey, new_ca, sign
from proxy.server.post_start_hooks import POST_START_HOOKS, PostStartHookContext
from tests.integration.conftest import start_server
from tests.integration.in_process import in_process_server, wait_ready

pytestmark = pytest.mark.etcd

POLICY = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"
DOWN_SECONDS = 1.5  # the crashed hook's backoff: how long readyz shows it down


def _settings(etcd: EtcdCluster, prefix: str, *flags: str) -> Any:
    return load_settings(
        [f"--etcd-servers={','.join(etcd.endpoints)}", f"--etcd-prefix={prefix}", *flags]
    )


async def _readyz(http: aiohttp.ClientSession) -> tuple[int, str]:
    async with http.get("/readyz?verbose") as resp:
        return resp.status, await resp.text()


async def test_a_crashed_hook_fails_readyz_while_down_and_is_restarted(
    etcd: EtcdCluster, etcd_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    runs = 0

    async def buggy(hook: PostStartHookContext) -> None:
        nonlocal runs
        runs += 1
        if runs == 1:
            raise ZeroDivisionError("a bug in a controller")
        await asyncio.Event().wait()  # then runs as a controller does

    def add_buggy(app: web.Application) -> None:
        hooks = app[POST_START_HOOKS]
        hooks.backoff = Backoff(initial=DOWN_SECONDS, factor=1.0, cap=DOWN_SECONDS, jitter=0.0)
        hooks.add("buggy-controller", buggy, ready=lambda: True)

    settings = _settings(etcd, etcd_prefix, "--port=0")
    async with (
        in_process_server(settings, add_buggy) as server,
        aiohttp.ClientSession(base_url=server.url) as http,
    ):
        task = server.app[POST_START_HOOKS].hooks["buggy-controller"].task
        assert task is not None
        for _ in range(1000):  # the supervisor saw the crash (within 10 s)
            if task.crashed is not None:
                break
            await asyncio.sleep(0.01)
        status, text = await _readyz(http)
        assert status == 500
        assert "[-]poststarthook/buggy-controller failed: reason withheld\n" in text
        assert text.endswith("readyz check failed\n")
        async with http.get("/readyz/poststarthook/buggy-controller") as resp:
            assert resp.status == 500
        await wait_ready(http)  # restarted after the backoff: up again
        status, text = await _readyz(http)
        assert "[+]poststarthook/buggy-controller ok\n" in text
        assert (runs, task.restarts) == (2, 1)
    crashes = [r for r in caplog.records
               if r.levelno == logging.ERROR and "buggy-controller" in r.getMessage()]  # fmt: skip
    assert len(crashes) == 1 and crashes[0].exc_info is not None  # once, with its traceback
    assert "ZeroDivisionError: a bug in a controller" in caplog.text


def _events(log: Path, count: int, predicate: Any) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 10
    while True:
        lines = log.read_text().splitlines() if log.exists() else []
        found = [e for e in map(json.loads, lines) if predicate(e)]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


async def test_internal_writes_are_audited_as_system_apiserver_on_the_plain_port(
    etcd: EtcdCluster, tmp_path: Path
) -> None:
    (tmp_path / "policy.yaml").write_text(POLICY)
    log = tmp_path / "audit.log"
    with start_server(etcd.endpoints, None, f"--audit-policy-file={tmp_path / 'policy.yaml'}",
                      f"--audit-log-path={log}") as proc:  # fmt: skip
        async with aiohttp.ClientSession(base_url=proc.url) as http:
            async with http.get("/api/v1/namespaces/kube-system") as resp:
                namespace = await resp.json()
            # a token that is not the loopback one changes nothing on the plain port
            headers = {"Authorization": "Bearer not-the-loopback-token"}
            async with http.get("/api/v1/namespaces/default", headers=headers) as resp:
                assert resp.status == 200
    [managed] = namespace["metadata"]["managedFields"]
    assert (managed["manager"], managed["operation"]) == ("kube-apiserver", "Update")

    def created_namespace(e: dict[str, Any]) -> bool:
        resource = (e.get("objectRef") or {}).get("resource")
        return (e["verb"], e["stage"], resource) == ("create", "ResponseComplete", "namespaces")

    events = _events(log, 4, created_namespace)
    assert sorted(e["objectRef"]["name"] for e in events) == [
        "default", "kube-node-lease", "kube-public", "kube-system"]  # fmt: skip
    for e in events:
        assert e["user"]["username"] == "system:apiserver"
        assert e["user"]["groups"] == ["system:masters", "system:authenticated"]
        assert e["sourceIPs"] == ["127.0.0.1"]
        assert e["responseStatus"]["code"] == 201
    [other] = _events(log, 1, lambda e: e["requestURI"] == "/api/v1/namespaces/default")[:1]
    assert other["user"]["username"] == "system:unsecured"


async def test_update_is_retried_on_a_conflict_and_ensure_reconciles(
    etcd: EtcdCluster, etcd_prefix: str
) -> None:
    settings = _settings(etcd, etcd_prefix, "--port=0")
    async with in_process_server(settings) as server:
        client = LoopbackClient(LoopbackConfig(server.url, server.token))
        try:
            async with aiohttp.ClientSession(base_url=server.url) as http:
                await wait_ready(http)
            configmaps = resource_path("", "v1", "configmaps", namespace="default")
            await client.create(configmaps, {"metadata": {"name": "c"}, "data": {"a": "1"}})
            path = f"{configmaps}/c"
            stale = await client.get(path)  # read before another writer's change
            assert stale is not None
            await client.update(path, lambda obj: {**obj, "data": {**obj["data"], "c": "3"}})
            read: list[str] = []

            def add_b(obj: dict[str, Any]) -> dict[str, Any]:
                # the first attempt writes what it read before the other writer's change
                base = obj if read else stale
                read.append(obj["metadata"]["resourceVersion"])
                return {**base, "data": {**base["data"], "b": "2"}}

            updated = await client.update(path, add_b)
            assert updated is not None and updated["data"] == {"a": "1", "b": "2", "c": "3"}
            assert len(read) == 2  # the Conflict made it read and change again
            assert await client.create_if_absent(configmaps, {"metadata": {"name": "c"}}) is None

            def reconcile(obj: dict[str, Any]) -> dict[str, Any] | None:
                return None if obj["data"].get("d") else {**obj, "data": {**obj["data"], "d": "4"}}

            ensured = await client.ensure(configmaps, {"metadata": {"name": "c"}}, reconcile)
            assert ensured["data"]["d"] == "4"
            assert ensured["metadata"]["managedFields"][-1]["manager"] == "kube-apiserver"
        finally:
            await client.close()


def test_the_loopback_client_trusts_the_serving_certificate_whatever_its_names(
    etcd: EtcdCluster, tmp_path: Path
) -> None:
    """A --tls-cert-file for another host name (no loopback address in it) signed by a CA
    the server has never heard of: the loopback client pins that certificate and dials
    the secure port it bound, so the bootstrap writes go through and the server gets
    ready."""
    ca = new_ca("someone-elses-ca")
    served = sign(ca, "api.example.com", dns_names=("api.example.com",), server=True)
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    CertKey(served.cert_pem + ca.cert_pem, served.key_pem).write(cert, key)
    with start_server(etcd.endpoints, None, "--secure-port=0", f"--tls-cert-file={cert}",
                      f"--tls-private-key-file={key}") as proc:  # fmt: skip
        log = proc.log()
    writes = [line for line in log.splitlines() if '"user":"system:apiserver"' in line]
    assert any('"path":"/api/v1/namespaces"' in line and '"code":201' in line for line in writes)


async def test_a_deleted_namespace_is_emptied_through_the_loopback_client(
    etcd: EtcdCluster, tmp_path: Path
) -> None:
    """The server's namespace controller empties a deleted namespace, each resource's
    content by a deletecollection of its own as system:apiserver (audited, admitted),
    as upstream's namespace deleter deletes through its client."""
    (tmp_path / "policy.yaml").write_text(POLICY)
    log = tmp_path / "audit.log"
    with start_server(etcd.endpoints, None, f"--audit-policy-file={tmp_path / 'policy.yaml'}",
                      f"--audit-log-path={log}") as proc:  # fmt: skip
        async with aiohttp.ClientSession(base_url=proc.url) as http:
            ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "emptied"}}
            async with http.post("/api/v1/namespaces", json=ns) as resp:
                assert resp.status == 201
            cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "inside"}}
            async with http.post("/api/v1/namespaces/emptied/configmaps", json=cm) as resp:
                assert resp.status == 201
                rv = (await resp.json())["metadata"]["resourceVersion"]
            async with http.delete("/api/v1/namespaces/emptied") as resp:
                assert resp.status == 200  # marked Terminating; emptied in the background
            watch = f"/api/v1/namespaces/emptied/configmaps?watch=1&resourceVersion={rv}"
            async with asyncio.timeout(30), http.get(watch) as resp:
                async for line in resp.content:
                    if json.loads(line)["type"] == "DELETED":
                        break

    def emptied(e: dict[str, Any]) -> bool:
        ref = e.get("objectRef") or {}
        return (e["verb"], e["stage"], ref.get("namespace"), ref.get("resource")) == (
            "deletecollection", "ResponseComplete", "emptied", "configmaps")  # fmt: skip

    [event] = _events(log, 1, emptied)
    assert event["user"]["username"] == "system:apiserver"
    assert event["requestURI"] == "/api/v1/namespaces/emptied/configmaps"
    assert event["responseStatus"]["code"] == 200
