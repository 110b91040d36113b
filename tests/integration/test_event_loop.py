"""``watchcache serve --event-loop=uvloop``: the whole server on uvloop's loop over
HTTPS with a bearer token (TLS is where uvloop's transport differs most): a write, a
cached GET, a paged LIST whose later pages come from the cache, and a watch event."""

from __future__ import annotations

import ssl
from pathlib import Path

import aiohttp
import orjson
import pytest

from tests.integration.conftest import ServerFactory, pod_body

pytestmark = pytest.mark.etcd

TOKEN = "loop-admin-token"


async def test_the_server_runs_on_uvloop(server_factory: ServerFactory, tmp_path: Path) -> None:
    (tmp_path / "tokens.csv").write_text(f"{TOKEN},root,0,system:masters\n")
    srv = server_factory(
        "--secure-port=0", f"--cert-dir={tmp_path / 'certs'}",
        f"--token-auth-file={tmp_path / 'tokens.csv'}", "--event-loop=uvloop",
    )  # fmt: skip
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
