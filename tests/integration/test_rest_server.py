"""The server as a process: health and version endpoints, discovery documents, the
config file, behaviour while etcd is down (bounded failures, readyz, recovery), and a
clean shutdown on SIGTERM with a watch open."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from lab.apiserver import cli_command
from lab.etcd import EtcdCluster
from tests.integration.conftest import REPO, ServerFactory, ServerProcess, create, pod_body

pytestmark = pytest.mark.etcd

JSON = dict[str, Any]


async def test_health_endpoints(http: aiohttp.ClientSession) -> None:
    for path in ("/healthz", "/livez", "/readyz"):
        async with http.get(path) as resp:
            assert resp.status == 200 and await resp.text() == "ok"
    async with http.get("/readyz?verbose") as resp:
        text = await resp.text()
    assert "[+]etcd ok" in text and text.endswith("readyz check passed\n")
    assert "[+]informer-sync ok" in text  # every controller's informer has synced
    async with http.get("/readyz/etcd") as resp:
        assert resp.status == 200 and await resp.text() == "ok"


async def test_version(http: aiohttp.ClientSession) -> None:
    async with http.get("/version") as resp:
        info = await resp.json()
    assert info["major"] == "1" and info["gitVersion"].startswith("v1.")


async def test_discovery_documents(http: aiohttp.ClientSession) -> None:
    async with http.get("/api") as resp:
        assert (await resp.json())["versions"] == ["v1"]
    async with http.get("/apis") as resp:
        groups = {g["name"]: g for g in (await resp.json())["groups"]}
    assert {"apps", "batch", "coordination.k8s.io", "rbac.authorization.k8s.io"} <= set(groups)
    assert groups["apps"]["preferredVersion"] == {"groupVersion": "apps/v1", "version": "v1"}
    async with http.get("/api/v1") as resp:
        core = {r["name"]: r for r in (await resp.json())["resources"]}
    assert core["pods"]["shortNames"] == ["po"]
    assert core["pods"]["categories"] == ["all"]
    assert core["pods"]["kind"] == "Pod" and core["pods"]["namespaced"] is True
    assert core["pods/status"]["verbs"] == ["get", "patch", "update"]
    assert core["nodes"]["namespaced"] is False
    assert "deletecollection" not in core["namespaces"]["verbs"]
    async with http.get("/apis/apps/v1") as resp:
        apps = await resp.json()
    assert apps["groupVersion"] == "apps/v1"
    deploy = next(r for r in apps["resources"] if r["name"] == "deployments")
    assert deploy["shortNames"] == ["deploy"] and deploy["singularName"] == "deployment"
    async with http.get("/apis/apps") as resp:
        assert (await resp.json())["kind"] == "APIGroup"


async def test_config_file_and_flag_precedence(
    server_factory: ServerFactory, tmp_path: Path
) -> None:
    config = tmp_path / "serve.yaml"
    config.write_text("etcd-prefix: /from-config\nwatch-cache: false\netcd-request-timeout: 3s\n")
    srv = server_factory(f"--config={config}", prefix="/from-flag")
    async with aiohttp.ClientSession(base_url=srv.url) as http, http.get("/readyz") as resp:
        assert resp.status == 200
    assert "--etcd-prefix=/from-flag" in srv.command()


async def test_bad_flags_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("no-such-setting: 1\n")
    for args in (["serve"], ["serve", f"--config={bad}", "--etcd-servers=http://x"]):
        proc = await asyncio.create_subprocess_exec(
            *cli_command(*args),
            cwd=REPO,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await proc.communicate()
        assert proc.returncode == 2, err
        assert b"Traceback" not in err


async def test_etcd_down_fails_bounded_then_recovers(
    server_factory: ServerFactory, etcd_own: EtcdCluster
) -> None:
    """With etcd unreachable, requests that need it answer what kube-apiserver's clients
    get: they wait on etcd until a deadline and receive the timeout filter's 504 with no
    Retry-After, which client-go (kubectl) does not retry. (They answered 503/504 with
    Retry-After, and kubectl retried each 10 times.)"""
    srv = server_factory(
        "--watch-cache=false", "--etcd-request-timeout=1s", "--etcd-dial-timeout=1s", etcd=etcd_own
    )
    async with aiohttp.ClientSession(base_url=srv.url) as http:
        await create(http, "/api/v1/namespaces", {"metadata": {"name": "d"}})
        await asyncio.to_thread(etcd_own.stop_member, 0)
        try:
            started = time.monotonic()
            requests = [
                http.get("/api/v1/namespaces/d/pods?limit=500"),
                http.get("/api/v1/namespaces/d/pods/p"),
                http.post("/api/v1/namespaces/d/configmaps", json={"metadata": {"name": "c"}}),
            ]
            for request in requests:
                async with request as resp:
                    status = await resp.json()
                    assert resp.status == 504 and "Retry-After" not in resp.headers, status
                assert (status["kind"], status["reason"], status["message"]) == (
                    "Status",
                    "Timeout",
                    "Timeout: request did not complete within the allotted timeout",
                )
                assert "retryAfterSeconds" not in (status.get("details") or {})
            assert time.monotonic() - started < 3 * 8
            async with http.get("/readyz") as resp:
                text = await resp.text()
                assert resp.status == 500
            assert "[-]etcd failed" in text and text.endswith("readyz check failed\n")
            async with http.get("/livez") as resp:
                assert resp.status == 200
        finally:
            await asyncio.to_thread(etcd_own.start_member, 0)
        await asyncio.to_thread(srv.wait_ready, 30)  # recovers by itself
        created = await create(http, "/api/v1/namespaces/d/pods", pod_body("back"))
        assert created["metadata"]["name"] == "back"


async def test_a_read_on_a_slow_etcd_is_bounded_by_its_request_deadline(
    server_factory: ServerFactory, etcd_own: EtcdCluster
) -> None:
    """Issue 23 §8: under many concurrent large LISTs, reads that etcd (or the loop)
    answered slowly were cut at the fixed --etcd-request-timeout with a 504, though
    their request had 60 s. Upstream passes the request's context to etcd: a read on a
    live etcd may take until the request's deadline. etcd is frozen (SIGSTOP: its
    connections stay open) for three times --etcd-request-timeout while a LIST and a
    GET wait on it; both are answered once it resumes. A request with its own shorter
    ``?timeout=`` still ends at that with the timeout filter's 504."""
    srv = server_factory("--watch-cache=false", "--etcd-request-timeout=1s", etcd=etcd_own)
    pid = etcd_own.members[0].pid
    assert pid is not None
    paths = ("/api/v1/namespaces/slow/configmaps", "/api/v1/namespaces/slow",
             "/api/v1/namespaces/slow/pods?timeout=1500ms")  # fmt: skip
    async with aiohttp.ClientSession(base_url=srv.url) as http:
        await create(http, "/api/v1/namespaces", {"metadata": {"name": "slow"}})

        async def status(path: str) -> tuple[int, float, float]:
            """The answer's status, when the request started and when it ended."""
            started = time.monotonic()
            async with http.get(path) as resp:
                await resp.read()
                return resp.status, started, time.monotonic()

        for _ in range(3):
            os.kill(pid, signal.SIGSTOP)
            try:
                waiting = [asyncio.ensure_future(status(p)) for p in paths]
                await asyncio.sleep(3.5)
            finally:
                os.kill(pid, signal.SIGCONT)
                resumed = time.monotonic()
            answers = await asyncio.gather(*waiting)
            # A stall of this process (a loaded machine) can start the requests only just
            # before etcd resumes, when they prove nothing: then the round is run again.
            if all(resumed - started >= 2.9 for _, started, _ in answers):
                break
        else:
            pytest.fail("the requests never waited 2.9 s on the frozen etcd in 3 rounds")
    (listed, list_at, list_end), (got, get_at, get_end), (short, short_at, short_end) = answers
    took = (list_end - list_at, get_end - get_at)
    assert (listed, got) == (200, 200), took
    assert list_end >= resumed and get_end >= resumed, took  # answered once etcd resumed
    assert short == 504 and 1.4 < short_end - short_at < 2.9


async def test_sigterm_with_open_watch_shuts_down_cleanly(server_factory: ServerFactory) -> None:
    srv: ServerProcess = server_factory()
    async with aiohttp.ClientSession(base_url=srv.url) as http:
        async with http.get("/api/v1/namespaces?watch=1") as resp:
            assert resp.status == 200
            srv.terminate()
            async with asyncio.timeout(15):
                while await resp.content.readline():
                    pass  # the initial events, then the end of the stream
        code = await asyncio.to_thread(srv.wait, 15)
    assert code == 0
    errors = [
        line
        for line in srv.log().splitlines()
        if " ERROR " in line and ("watchcache.proxy" in line or "aiohttp" in line)
    ]
    assert errors == []


@pytest.mark.parametrize("watch_cache", ["false", "true"])
async def test_starts_while_etcd_is_down_and_becomes_ready(
    server_factory: ServerFactory, etcd_own: EtcdCluster, watch_cache: str
) -> None:
    """Every watch cache is built at start-up even with etcd down: they stay unready
    (readyz says so, RV=0 reads fall back to etcd and fail bounded) and prime once
    etcd is back, with no request needed."""
    await asyncio.to_thread(etcd_own.stop_member, 0)
    flags = (
        f"--watch-cache={watch_cache}",
        "--etcd-dial-timeout=1s",
        "--etcd-request-timeout=1s",
    )
    srv = server_factory(*flags, etcd=etcd_own, wait_ready=False)
    async with aiohttp.ClientSession(base_url=srv.url) as http:
        async with http.get("/readyz?verbose") as resp:
            assert resp.status == 500
            text = await resp.text()
        assert "[-]etcd failed" in text
        readiness = "poststarthook/storage-readiness"
        assert (f"[-]{readiness} failed" if watch_cache == "true" else f"[+]{readiness} ok") in (
            text
        )
        for path in ("/api/v1/namespaces", "/api/v1/namespaces?resourceVersion=0"):
            async with http.get(path) as resp:
                assert resp.status in (503, 504), path
        await asyncio.to_thread(etcd_own.start_member, 0)
        await asyncio.to_thread(srv.wait_ready, 30)
        async with http.get("/api/v1/namespaces") as resp:
            assert resp.status == 200
        async with http.get("/api/v1/namespaces?resourceVersion=0") as resp:
            assert resp.status == 200
            served_from = "cache" if watch_cache == "true" else "etcd"
            assert resp.headers["X-Watchcache-Served-From"] == served_from


async def test_metrics_and_access_log(
    http: aiohttp.ClientSession, namespace: str, server: ServerProcess
) -> None:
    await create(http, f"/api/v1/namespaces/{namespace}/pods", pod_body("m1"))
    async with http.get(f"/api/v1/namespaces/{namespace}/pods?fieldSelector=spec.nodeName%3Dx"):
        pass
    async with http.get("/metrics") as resp:
        assert resp.status == 200
        text = await resp.text()
    # a create's scope is "resource", as upstream's installer labels POST routes
    assert (
        'apiserver_request_total{code="201",component="apiserver",dry_run="",group="",'
        'resource="pods",scope="resource",subresource="",verb="POST",version="v1"}'
    ) in text
    assert 'apiserver_storage_list_fetched_objects_total{group="",resource="pods"}' in text
    assert "apiserver_request_duration_seconds_bucket" in text
    assert "apiserver_longrunning_requests" in text
    # every etcd call of the pods store is timed under its operation and resource
    for operation in ("create", "list"):
        assert (
            f'etcd_request_duration_seconds_count{{group="",operation="{operation}",'
            'resource="pods"}'
        ) in text
    access = [line for line in server.log().splitlines() if "watchcache.access" in line]
    assert any('"servedFrom":"etcd"' in line and '"returned":0' in line for line in access)
    assert all('"userAgent":"' in line for line in access)


async def test_debug_endpoints_describe_caches_and_recent_requests(
    server_factory: ServerFactory,
) -> None:
    """What the lab's live page polls: /debug/watchcache and /debug/requests."""
    server = server_factory()  # with the watch cache
    async with aiohttp.ClientSession(base_url=server.url) as http:
        async with http.get("/api/v1/pods?resourceVersion=0") as resp:
            assert resp.status == 200
        async with http.get("/debug/requests?since=0") as resp:
            recent = await resp.json()
        assert recent["seq"] >= 1
        (mine,) = [e for e in recent["items"] if e["path"] == "/api/v1/pods?resourceVersion=0"]
        assert mine["verb"] == "LIST" and mine["servedFrom"] == "cache" and mine["userAgent"]
        async with http.get(f"/debug/requests?since={recent['seq']}") as resp:
            later = (await resp.json())["items"]
        # nothing of ours since; the server's own controllers may have written meanwhile
        assert [e for e in later if not e["userAgent"].startswith("kube-apiserver/")] == []
        async with http.get("/debug/watchcache") as resp:
            state = await resp.json()
    assert state["etcdRevision"] > 0
    assert state["protobufDecoder"] == "C"  # the extension is built and serves
    (pods,) = [c for c in state["caches"] if c["resource"] == "pods"]
    assert pods["index"] == "spec.nodeName" and pods["resourceVersion"] <= state["etcdRevision"]
    assert {"oldest", "size", "capacity"} <= set(pods["history"])
