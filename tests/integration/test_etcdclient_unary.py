"""The client's unary calls without grpc.aio's per-call Task (``etcdclient._unary``),
over a real etcd: the direct call is the one in use on the installed grpc, answers as
grpc.aio's would, and its errors, deadline and cancellation are grpc.aio's."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator

import grpc
import pytest

from etcdclient import DeadlineExceeded, EtcdClient, FutureRevision
from etcdclient._pb import rpc_pb2
from etcdclient._unary import DirectUnary, unary
from lab.etcd import EtcdCluster

pytestmark = pytest.mark.etcd


@pytest.fixture
async def client(etcd_own: EtcdCluster) -> AsyncIterator[EtcdClient]:
    async with EtcdClient(etcd_own.endpoints, request_timeout=5.0) as c:
        yield c


async def test_the_direct_call_answers_as_grpc_aio(client: EtcdClient, etcd_prefix: str) -> None:
    """On the installed grpc every unary call goes direct (if a grpc release changes the
    private layer it needs, this fails: the public path still works, the saving is
    gone), and its answer is the public call's."""
    key = f"{etcd_prefix}/k".encode()
    await client.put(key, b"v")
    ep = client._pool.in_order()[0]
    direct = ep.unary("kv", "Range")
    assert isinstance(direct, DirectUnary)
    assert ep.unary("kv", "Range") is direct  # made once per channel
    request = rpc_pb2.RangeRequest(key=key)
    got = await direct(request, 5.0)
    public = await ep.kv.Range(request, timeout=5.0)
    assert got == public and got.kvs[0].value == b"v"
    assert (await client.get(key)).kv is not None


async def test_errors_are_grpc_aio_errors(client: EtcdClient, etcd_prefix: str) -> None:
    """etcd's refusal is an AioRpcError with its code and details (the client translates
    it as before). Deadlines: test_a_cancelled_call_ends_at_once."""
    ep = client._pool.in_order()[0]
    future = rpc_pb2.RangeRequest(key=etcd_prefix.encode(), revision=1 << 40)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await ep.unary("kv", "Range")(future, 5.0)
    assert err.value.code() == grpc.StatusCode.OUT_OF_RANGE
    assert "future revision" in (err.value.details() or "")
    with pytest.raises(FutureRevision):
        await client.get(etcd_prefix.encode(), revision=1 << 40)


async def test_a_cancelled_call_ends_at_once(
    client: EtcdClient, etcd_own: EtcdCluster, etcd_prefix: str
) -> None:
    """A call waiting on a frozen etcd (SIGSTOP) is cancelled at once when its task is;
    the next call ends at its own deadline (DEADLINE_EXCEEDED; the client's
    DeadlineExceeded); once etcd resumes, calls answer again."""
    pid = etcd_own.members[0].pid
    assert pid is not None
    key = etcd_prefix.encode()
    request = rpc_pb2.RangeRequest(key=key)
    call = client._pool.in_order()[0].unary("kv", "Range")
    os.kill(pid, signal.SIGSTOP)
    try:
        waiting = asyncio.ensure_future(call(request, 30.0))
        await asyncio.sleep(0.3)
        assert not waiting.done()
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):  # not TimeoutError
            async with asyncio.timeout(1.0):
                await waiting
        with pytest.raises(grpc.aio.AioRpcError) as err:
            async with asyncio.timeout(3.0):
                await call(request, 0.5)
        assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        short = EtcdClient(etcd_own.endpoints, request_timeout=0.5)
        short._pool = client._pool  # the same channels, READY: the call itself times out
        with pytest.raises(DeadlineExceeded):
            await short.get(key)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert (await client.get(key)).kv is None


async def test_closing_the_client_cancels_the_calls_in_flight(etcd_own: EtcdCluster) -> None:
    """A GET waiting on a frozen etcd ends with CancelledError as soon as its client is
    closed (grpc.aio's channel cancels only the calls it made itself), not at its
    deadline."""
    pid = etcd_own.members[0].pid
    assert pid is not None
    client = EtcdClient(etcd_own.endpoints, request_timeout=20.0)
    await client.connect()
    os.kill(pid, signal.SIGSTOP)
    try:
        waiting = asyncio.ensure_future(client.get(b"/frozen"))
        await asyncio.sleep(0.3)
        assert not waiting.done()
        await client.close()
        with pytest.raises(asyncio.CancelledError):  # not TimeoutError
            async with asyncio.timeout(2.0):
                await waiting
    finally:
        os.kill(pid, signal.SIGCONT)


def test_a_stub_that_is_not_grpc_aio_is_called_as_it_is() -> None:
    """Anything but grpc.aio's own multicallable (a test's fake stub) is called through
    its public signature."""

    async def fake(request: object, **kw: float) -> tuple[object, float]:
        return request, kw["timeout"]

    call = unary(fake)
    assert not isinstance(call, DirectUnary)
    assert asyncio.run(call("r", 2.0)) == ("r", 2.0)  # type: ignore[arg-type]
