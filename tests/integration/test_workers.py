"""``watchcache serve --workers 2`` over a real etcd: two serving processes on one port,
each with its own watch cache, as two kube-apiserver replicas behind a balancer.

Each worker also listens on a private loopback port, announced on the server's stdout
(``worker K (pid P) serving on URL``): the tests write through one worker and read or
watch through the other at the write's resourceVersion, find the controllers' Lease
held by one worker and taken over by the other when its holder is killed, and check
that the supervisor restarts a dead worker and leaves no process behind.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import aiohttp
import orjson
import pytest

from lab.apiserver import APIServer, PortTaken
from lab.etcd import EtcdCluster
from tests.integration.conftest import JSON, ServerProcess, start_server
from tests.integration.crd_support import crd_body, unique_group

WORKER_LINE = re.compile(r"^worker (\d+) \(pid (\d+)\) serving on (\S+)$", re.MULTILINE)
LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/watchcache-controllers"
# short leases, so a handover takes seconds (the defaults are 15 s / 10 s / 2 s)
ELECTION = (
    "--leader-elect-lease-duration=3s",
    "--leader-elect-renew-deadline=2s",
    "--leader-elect-retry-period=0.5s",
)


def workers_of(server: ServerProcess) -> dict[int, tuple[int, str]]:
    """worker index -> (pid, private URL), the latest start of each."""
    found: dict[int, tuple[int, str]] = {}
    for index, pid, url in WORKER_LINE.findall(server.log()):
        found[int(index)] = (int(pid), url)
    return found


def alive(pid: int) -> bool:
    """Running (a zombie nobody reaped yet has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


async def wait_for(predicate: Callable[[], Awaitable[bool]], within: float, what: str) -> None:
    """Poll ``predicate`` (another process's state: nothing to await) until true."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if await predicate():
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"not within {within}s: {what}")


@pytest.fixture(scope="module")
def workers(etcd: EtcdCluster) -> Iterator[ServerProcess]:
    with start_server(etcd.endpoints, None, "--workers=2", *ELECTION, timeout=120) as server:
        yield server


async def get_json(session: aiohttp.ClientSession, url: str) -> tuple[int, JSON, str]:
    async with session.get(url) as resp:
        return resp.status, orjson.loads(await resp.read()), resp.headers.get(
            "X-Watchcache-Worker", ""
        )


async def ready_workers(session: aiohttp.ClientSession, server: ServerProcess) -> dict[int, str]:
    """Every worker's private URL once all of them answer /readyz."""
    urls: dict[int, str] = {}

    async def all_ready() -> bool:
        urls.update({k: url for k, (_, url) in workers_of(server).items()})
        if len(urls) < 2:
            return False
        for url in urls.values():
            try:
                async with session.get(url + "/readyz") as resp:
                    if resp.status != 200:
                        return False
            except aiohttp.ClientError:
                return False
        return True

    await wait_for(all_ready, 60, "both workers ready")
    return urls


async def test_one_port_two_workers_each_named(workers: ServerProcess) -> None:
    async with aiohttp.ClientSession() as session:
        urls = await ready_workers(session, workers)
        for index, url in urls.items():
            async with session.get(url + "/version") as resp:
                assert resp.headers["X-Watchcache-Worker"] == str(index)
                assert resp.headers["X-Watchcache-Instance"] == workers.instance_id
        seen: set[str] = set()
        for _ in range(200):  # a new connection each time: the kernel picks a listener
            async with aiohttp.ClientSession() as fresh, fresh.get(workers.url + "/livez") as r:
                seen.add(r.headers["X-Watchcache-Worker"])
            if seen == {"1", "2"}:
                break
        assert seen == {"1", "2"}
        async with session.get(urls[2] + "/metrics") as resp:
            text = await resp.text()
        samples = [line for line in text.splitlines() if line and not line.startswith("#")]
        assert samples and all('{worker="2"' in line for line in samples), samples[:3]


async def test_write_through_one_worker_read_and_watch_through_the_other(
    workers: ServerProcess,
) -> None:
    async with aiohttp.ClientSession() as session:
        urls = await ready_workers(session, workers)
        ns = f"ns-{uuid.uuid4().hex[:8]}"
        async with session.post(urls[1] + "/api/v1/namespaces", json={"metadata": {"name": ns}}):
            pass
        cms = f"{urls[1]}/api/v1/namespaces/{ns}/configmaps"
        async with session.post(cms, json={"metadata": {"name": "a"}, "data": {"v": "0"}}) as r:
            assert r.status == 201, await r.text()
            created = orjson.loads(await r.read())
        rv = created["metadata"]["resourceVersion"]
        other = f"{urls[2]}/api/v1/namespaces/{ns}/configmaps"
        # NotOlderThan: worker 2's cache waits until it has seen worker 1's write
        code, got, by = await get_json(session, f"{other}/a?resourceVersion={rv}")
        assert (code, got["data"], by) == (200, {"v": "0"}, "2")
        code, listed, _ = await get_json(session, f"{other}?resourceVersion={rv}")
        assert [i["metadata"]["name"] for i in listed["items"]] == ["a"]
        assert int(listed["metadata"]["resourceVersion"]) >= int(rv)
        # a watch on worker 2 from the write's resourceVersion gets worker 1's next write
        watch = f"{other}?watch=1&resourceVersion={rv}&timeoutSeconds=20"
        async with session.get(watch) as stream:
            assert stream.headers["X-Watchcache-Worker"] == "2"
            body = {**created, "data": {"v": "1"}}
            async with session.put(f"{cms}/a", json=body) as r:
                assert r.status == 200, await r.text()
                updated = orjson.loads(await r.read())
            event = orjson.loads(await stream.content.readline())
        assert event["type"] == "MODIFIED"
        assert event["object"]["metadata"]["resourceVersion"] == (
            updated["metadata"]["resourceVersion"]
        )


async def test_consistent_reads_see_the_other_workers_writes(workers: ServerProcess) -> None:
    """An unset resourceVersion is a consistent read: each one, on the other worker,
    right after the write, sees it (a read served from a lagging cache would not)."""
    async with aiohttp.ClientSession() as session:
        urls = await ready_workers(session, workers)
        ns = f"ns-{uuid.uuid4().hex[:8]}"
        async with session.post(urls[2] + "/api/v1/namespaces", json={"metadata": {"name": ns}}):
            pass
        writer, reader = (f"{urls[k]}/api/v1/namespaces/{ns}/configmaps" for k in (2, 1))
        for i in range(10):
            async with session.post(writer, json={"metadata": {"name": f"c{i}"}}) as r:
                assert r.status == 201, await r.text()
            code, got, by = await get_json(session, f"{reader}/c{i}")
            assert (code, by) == (200, "1"), got
            code, listed, _ = await get_json(session, reader)
            assert len(listed["items"]) == i + 1


async def test_the_controllers_run_in_the_lease_holder_and_move_when_it_dies(
    workers: ServerProcess,
) -> None:
    async with aiohttp.ClientSession() as session:
        urls = await ready_workers(session, workers)
        _, lease, _ = await get_json(session, urls[1] + LEASE)
        holder = lease["spec"]["holderIdentity"]
        leader = int(holder.rsplit("_", 1)[0].rsplit("-", 1)[1])
        assert re.search(f"_{workers.instance_id}_worker-{leader}_[0-9a-f]{{8}}$", holder)
        # the bootstrap controller ran (in the holder): the kubernetes endpoints name the
        # port every worker serves, never the holder's private one
        default = urls[3 - leader] + "/api/v1/namespaces/default"
        code, _, _ = await get_json(session, default + "/services/kubernetes")
        assert code == 200
        _, endpoints, _ = await get_json(session, default + "/endpoints/kubernetes")
        assert [p["port"] for p in endpoints["subsets"][0]["ports"]] == [workers.port]
        pid = workers_of(workers)[leader][0]
        os.kill(pid, signal.SIGKILL)
        survivor = urls[3 - leader]

        async def taken_over() -> bool:
            code, now, _ = await get_json(session, survivor + LEASE)
            spec = now.get("spec") or {}
            holder = str(spec.get("holderIdentity", ""))
            return code == 200 and f"_worker-{3 - leader}_" in holder

        await wait_for(taken_over, 20, "the other worker holds the Lease")
        _, lease, _ = await get_json(session, survivor + LEASE)
        assert lease["spec"]["leaseTransitions"] >= 1
        # the new holder names and establishes a CRD (its naming controller writes)
        crd = crd_body(unique_group(), short_names=())
        crds = survivor + "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        async with session.post(crds, json=crd) as r:
            assert r.status == 201, await r.text()

        async def established() -> bool:
            _, got, _ = await get_json(session, f"{crds}/{crd['metadata']['name']}")
            conds = (got.get("status") or {}).get("conditions") or []
            return any(c["type"] == "Established" and c["status"] == "True" for c in conds)

        await wait_for(established, 20, "the CRD established")
        # and the supervisor started the killed worker again

        async def restarted() -> bool:
            return workers_of(workers)[leader][0] != pid

        await wait_for(restarted, 60, "the worker restarted")
        await ready_workers(session, workers)


async def test_sigterm_stops_every_worker_and_releases_the_lease(
    workers: ServerProcess, etcd: EtcdCluster
) -> None:
    """(Last in this module: it stops the shared server.)"""
    async with aiohttp.ClientSession() as session:
        await ready_workers(session, workers)
    pids = [pid for pid, _ in workers_of(workers).values()]
    workers.terminate()
    assert workers.wait(30) == 0
    assert not [pid for pid in pids if alive(pid)]
    with start_server(etcd.endpoints, workers.prefix, "--system-namespaces=false") as single:
        async with aiohttp.ClientSession() as session:
            _, lease, _ = await get_json(session, single.url + LEASE)
    assert not lease["spec"].get("holderIdentity"), lease  # released, not left to expire


def test_a_killed_supervisor_leaves_no_worker(etcd: EtcdCluster) -> None:
    server = start_server(etcd.endpoints, None, "--workers=2", wait_ready=False, timeout=120)
    try:
        deadline = time.monotonic() + 60
        while len(workers_of(server)) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        pids = [pid for pid, _ in workers_of(server).values()]
        assert len(pids) == 2, server.log()
        os.kill(server.pid, signal.SIGKILL)
        server.wait()
        deadline = time.monotonic() + 30
        while any(alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [pid for pid in pids if alive(pid)], server.log()[-2000:]
    finally:
        server.stop()


def test_a_taken_port_fails_the_start_before_any_worker(etcd: EtcdCluster) -> None:
    """The supervisor binds the port without SO_REUSEPORT first: a port another process
    listens on is refused (exit code 3), never silently shared with it."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = APIServer(etcd.endpoints, f"/t-{uuid.uuid4().hex[:8]}", port=port,
                           extra_args=("--workers=2",))  # fmt: skip
        with pytest.raises(PortTaken):
            server.start(60)
        assert server.process is not None and server.process.returncode == 3
        assert "worker 1 started" not in server.log()
