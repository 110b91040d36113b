"""Which calls EtcdClient repeats on another endpoint after Unavailable: reads and guarded
transactions are; a plain put/delete that may have been applied is not."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from etcdclient import EtcdClient, InvalidArgument, Unavailable
from etcdclient._endpoints import Endpoint, EndpointPool, TLSFiles
from etcdclient._pb import rpc_pb2
from tests.unit.etcdclient.fakes import rpc_error


class FakeKV:
    """Fails with the given codes first, then answers."""

    def __init__(self, failures: list[grpc.StatusCode]) -> None:
        self.failures = failures
        self.calls = 0

    async def _answer(self, response: Any) -> Any:
        self.calls += 1
        if self.failures:
            raise rpc_error(self.failures.pop(0))
        return response

    async def Range(self, request: Any, **kw: Any) -> Any:
        return await self._answer(rpc_pb2.RangeResponse(header=rpc_pb2.ResponseHeader(revision=7)))

    async def Txn(self, request: Any, **kw: Any) -> Any:
        return await self._answer(rpc_pb2.TxnResponse(
            header=rpc_pb2.ResponseHeader(revision=8), succeeded=True,
            responses=[rpc_pb2.ResponseOp(response_put=rpc_pb2.PutResponse())]))  # fmt: skip

    async def Put(self, request: Any, **kw: Any) -> Any:
        return await self._answer(rpc_pb2.PutResponse(header=rpc_pb2.ResponseHeader(revision=9)))


class FakePool(EndpointPool):
    """The client's own pool over endpoints that answer with ``kv`` and need no channel:
    the current endpoint is ready at once; failures are recorded."""

    def __init__(self, urls: list[str], kv: FakeKV) -> None:
        super().__init__(urls, TLSFiles())
        for ep in self.endpoints:
            ep.kv = kv
        self.failed_urls: list[str] = []

    async def ready(self, deadline: float) -> Endpoint:
        return self.in_order()[0]

    def failed(self, ep: Endpoint, error: str = "") -> None:
        self.failed_urls.append(ep.url)
        super().failed(ep, error)


def client_with(kv: FakeKV) -> tuple[EtcdClient, FakePool]:
    c = EtcdClient(["http://a:1", "http://b:1"], request_timeout=2)
    pool = FakePool(c.endpoints, kv)
    c._pool = pool
    return c, pool


async def test_reads_and_guarded_txns_fail_over() -> None:
    kv = FakeKV([grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNAVAILABLE])
    c, pool = client_with(kv)
    assert (await c.get(b"/k")).revision == 7
    assert pool.failed_urls == ["http://a:1", "http://b:1"] and kv.calls == 3
    kv.failures = [grpc.StatusCode.UNAVAILABLE]
    assert (await c.create(b"/k", b"v")).succeeded


async def test_plain_put_is_not_repeated_after_it_was_sent() -> None:
    kv = FakeKV([grpc.StatusCode.UNAVAILABLE])
    c, pool = client_with(kv)
    with pytest.raises(Unavailable):
        await c.put(b"/k", b"v")
    assert kv.calls == 1 and pool.failed_urls == ["http://a:1"]
    assert await c.put(b"/k", b"v") == 9  # the next call goes to the other endpoint


async def test_other_errors_are_not_retried() -> None:
    kv = FakeKV([grpc.StatusCode.INVALID_ARGUMENT])
    c, _ = client_with(kv)
    with pytest.raises(InvalidArgument):
        await c.get(b"/k")
    assert kv.calls == 1
