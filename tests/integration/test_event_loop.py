"""``watchcache serve --event-loop=asyncio|uvloop``, and without the flag (uvloop's, a test
dependency): the whole server on that loop over HTTPS with a bearer token (TLS is where
uvloop's transport differs most): a write, a cached GET, a paged LIST whose later pages
come from the cache, a watch event, a delete. The default loop is uvloop's, so this is
where the suite keeps covering asyncio's request path."""

from __future__ import annotations

import ssl
from pathlib import Path

import aiohttp
import orjson
import pytest

from lab.apiserver import EVENT_LOOP_ENV
from tests.integration.conftest import ServerFactory, pod_body

pytestmark = pytest.mark.etcd

TOKEN = "loop-admin-token"


@pytest.mark.parametrize(("flags", "loop"), [
    (("--event-loop=asyncio",), "asyncio"),
    (("--event-loop=uvloop",), "uvloop"),
    ((), "uvloop"),  # no flag: uvloop's, installed
])  # fmt: skip
async def test_the_server_runs_on_its_loop(
    server_factory: ServerFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    flags: tuple[str, ...], loop: str,
) -> None:  # fmt: skip
    monkeypatch.delenv(EVENT_LOOP_ENV, raising=False)  # the flag, or none, as written here
    (tmp_path / "tokens.csv").write_text(f"{TOKEN},root,0,system:masters\n")
    srv = server_factory(
        "--secure-port=0", f"--cert-dir={tmp_path / 'certs'}",
        f"--token-auth-file={tmp_path / 'tokens.csv'}", *flags,
    )  # fmt: skip
    assert f"running on the {loop} event loop" in srv.log()
    tls = ssl.create_default_context(cafile=str(tmp_path / "certs" / "apiserver.crt"))
    headers = {"Authorization": f"Bearer {TOKEN}"}
    connector = aiohttp.TCPConnector(ssl=tls)
    async with aiohttp.ClientSession(srv.secure_url, headers=headers, connector=connector) as s:
        async with s.post("/api/v1/namespaces", json={"metadata": {"name": "uv"}}) as r:
            assert r.status == 201, await r.text()
        pods = "/api/v1/namespaces/uv/pods"
        async with s.get(f"{pods}?watch=1&resourceVersion=0&timeoutSeconds=5") as watch:
            assert watch.status == 200
            last = 0
            for i in range(3):
                async with s.post(pods, json=pod_body(f"p{i}")) as r:
                    assert r.status == 201
                    last = int((await r.json())["metadata"]["resourceVersion"])
            event = orjson.loads(await watch.content.readline())
            assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "p0")
        async with s.get(f"{pods}/p1?resourceVersion={last}") as r:  # the cache, once fresh
            assert r.status == 200 and (await r.json())["metadata"]["name"] == "p1"
        async with s.get(f"{pods}?limit=2&resourceVersion={last}") as r:
            first = await r.json()
        async with s.get(f"{pods}?limit=2&continue={first['metadata']['continue']}") as r:
            assert r.headers["X-Watchcache-Served-From"] == "cache"
            assert [p["metadata"]["name"] for p in (await r.json())["items"]] == ["p2"]
        async with s.delete(f"{pods}/p0") as r:
            assert r.status == 200, await r.text()
