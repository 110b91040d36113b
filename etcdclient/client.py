"""EtcdClient: the Kubernetes-shaped etcd v3 client on grpc.aio.

Every call has a deadline (``request_timeout``) and raises only ``etcdclient.errors``.

Failover. There is one channel per endpoint; calls go to the current endpoint while its
channel is READY, else to another READY one (see ``_endpoints``). What happens when a
call fails with Unavailable depends on whether repeating it is safe:

- reads (get, range, list_prefix, status, member_list) and the guarded transactions
  (create, optimistic_put, optimistic_delete) are retried on the next endpoint with a
  short backoff until the deadline. A guarded Txn whose first attempt was applied
  without our hearing of it fails its guard on the retry and returns the current value
  (which is then our own write): the caller sees a conflict, never a double write.
- plain put, delete, compact, lease_grant and lease_revoke are NOT retried after they
  were sent: etcd may or may not have applied them, and only the caller knows whether
  repeating is right. They raise Unavailable; the next call goes to another endpoint.
  They are sent only over a READY channel, so a dead member is skipped beforehand.

etcd reports "compacted" and "future revision" with the same status code; the client
tells them apart by asking etcd (current revision; a watch at that revision reports the
compact revision), so callers get Compacted(compact_revision) or FutureRevision.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Self, Unpack

import grpc

from etcdclient import _convert
from etcdclient._endpoints import Endpoint, EndpointPool, TLSFiles
from etcdclient._pb import rpc_pb2
from etcdclient._translate import RevisionOutOfRange, translate
from etcdclient.deadline import call_timeout
from etcdclient.errors import (
    ClientClosed,
    Compacted,
    EtcdError,
    FutureRevision,
    Unavailable,
)
from etcdclient.lease import LeaseKeepAlive
from etcdclient.types import (
    GetResult,
    Lease,
    Member,
    RangeOptions,
    RangeResult,
    Status,
    TxnResult,
)
from etcdclient.watch import Watch, WatchStream

__all__ = ["EtcdClient", "prefix_end"]

prefix_end = _convert.prefix_end

_RETRY_BACKOFF_INITIAL = 0.025
_RETRY_BACKOFF_MAX = 0.5


def _describe_failure(ep: Endpoint) -> str:
    text = f"{ep.url}: {ep.last_error or 'no answer'}"
    if ep.secure:
        # gRPC's wording for a refused client certificate can be as vague as "unwrap failed".
        text += " [TLS endpoint: if it is up, check ca_file, cert_file and key_file]"
    return text


class EtcdClient:
    """An etcd v3 client over one or more endpoints (``http://``, ``https://`` or ``host:port``).

    TLS: ``ca_file`` verifies the server (else the system roots for https endpoints);
    ``cert_file`` + ``key_file`` present a client certificate (mTLS).
    """

    def __init__(
        self,
        endpoints: Sequence[str],
        *,
        ca_file: str | None = None,
        cert_file: str | None = None,
        key_file: str | None = None,
        dial_timeout: float = 5.0,
        request_timeout: float = 10.0,
    ) -> None:
        self.endpoints: list[str] = list(endpoints)
        self.dial_timeout = dial_timeout
        self.request_timeout = request_timeout
        self._pool = EndpointPool(self.endpoints, TLSFiles.read(ca_file, cert_file, key_file))
        # watch streams by name (``watch(stream=...)``), opened on first use
        self._watch_streams: dict[str, WatchStream] = {}
        self._keepalive_tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    # -- lifecycle -------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.connect()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def connect(self) -> None:
        """Wait up to ``dial_timeout`` until some endpoint answers a Status request.

        Raises Unavailable naming each endpoint's last error (refused, TLS handshake, ...).
        """
        self._check_open()
        self._pool.open()
        probes = {asyncio.ensure_future(self._probe(ep)): ep for ep in self._pool.in_order()}
        try:
            done, _ = await asyncio.wait(
                probes, timeout=self.dial_timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for task in probes:
                task.cancel()
            await asyncio.gather(*probes, return_exceptions=True)
        if not done:
            details = "; ".join(_describe_failure(ep) for ep in probes.values())
            raise Unavailable(
                f"no etcd endpoint reachable within {self.dial_timeout:g}s ({details})"
            )
        self._pool.prefer(probes[next(iter(done))])

    async def _probe(self, ep: Endpoint) -> None:
        backoff = _RETRY_BACKOFF_INITIAL
        while True:
            try:
                await ep.maintenance.Status(rpc_pb2.StatusRequest(), timeout=self.dial_timeout)
                return
            except grpc.aio.AioRpcError as e:
                ep.last_error = f"{e.code().name}: {e.details()}"
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _RETRY_BACKOFF_MAX)

    async def close(self) -> None:
        """Cancel and await every task the client owns, then close the channels.
        Watches raise ClientClosed afterwards; so does every call."""
        if self._closed:
            return
        self._closed = True
        for stream in self._watch_streams.values():
            await stream.close()
        for task in list(self._keepalive_tasks):
            task.cancel()
        await asyncio.gather(*self._keepalive_tasks, return_exceptions=True)
        await self._pool.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ClientClosed("etcd client is closed")

    # -- the call path -------------------------------------------------------------

    async def _call(
        self, service: str, method: str, request: Any, *, idempotent: bool,
        endpoint: str | None = None,
    ) -> Any:  # fmt: skip
        """Send one unary RPC with the request deadline; see the module docstring for
        which calls are retried on another endpoint."""
        _, resp = await self._invoke(service, method, request, idempotent, endpoint)
        return resp

    async def _invoke(
        self, service: str, method: str, request: Any, idempotent: bool, endpoint: str | None
    ) -> tuple[Endpoint, Any]:
        """``_call`` that also tells which endpoint answered."""
        self._check_open()
        loop = asyncio.get_running_loop()
        # a reachable endpoint is awaited request_timeout at most; the call itself may
        # run until the caller's deadline when it has a later one (etcdclient.deadline)
        now = loop.time()
        ready_by = now + self.request_timeout
        deadline = now + call_timeout(self.request_timeout)
        backoff = _RETRY_BACKOFF_INITIAL
        while True:
            if endpoint is None:
                ep = self._pool.current_if_ready() or await self._pool.ready(ready_by)
            else:
                self._pool.open()
                ep = self._pool.by_url(endpoint)
            try:
                resp = await ep.unary(service, method)(request, max(deadline - loop.time(), 0.001))
                return ep, resp
            except grpc.aio.AioRpcError as e:
                err = translate(e, ep.url)
            if not isinstance(err, Unavailable):
                raise err
            self._pool.failed(ep, str(err))
            if not idempotent or endpoint is not None or loop.time() + backoff >= ready_by:
                raise err
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _RETRY_BACKOFF_MAX)

    async def _resolve_out_of_range(self, key: bytes, revision: int) -> EtcdError:
        """Compacted(compact_revision) or FutureRevision for an OUT_OF_RANGE at ``revision``."""
        current = await self._call(
            "kv", "Range", rpc_pb2.RangeRequest(key=key, count_only=True), idempotent=True
        )
        if revision > current.header.revision:
            return FutureRevision(
                f"required revision {revision} is a future revision "
                f"(current {current.header.revision})"
            )
        # etcd tells the compact revision to a watch that starts before it.
        watch = self.watch(key, start_revision=revision, buffer_size=1)
        try:
            async with asyncio.timeout(self.request_timeout):
                async for _ in watch:
                    break
        except Compacted as e:
            return e
        except TimeoutError:
            pass
        finally:
            await watch.cancel()
        return Compacted(0, f"required revision {revision} has been compacted")

    # -- KV ------------------------------------------------------------------------

    async def _range(self, request: rpc_pb2.RangeRequest) -> rpc_pb2.RangeResponse:
        try:
            resp: rpc_pb2.RangeResponse = await self._call("kv", "Range", request, idempotent=True)
        except RevisionOutOfRange:
            raise await self._resolve_out_of_range(request.key, request.revision) from None
        return resp

    async def get(self, key: bytes, *, revision: int = 0, serializable: bool = False) -> GetResult:
        """The key's value at ``revision`` (0: newest); ``kv`` None if absent."""
        req = _convert.range_request(key, revision=revision, serializable=serializable)
        return _convert.get_result(await self._range(req))

    async def range(
        self, key: bytes, range_end: bytes | None = None, **options: Unpack[RangeOptions]
    ) -> RangeResult:
        """Keys in [key, range_end) sorted by key (``range_end`` None: just ``key``), read
        as ``options`` say (:class:`~etcdclient.types.RangeOptions`).

        ``revision`` 0 reads the newest state (linearizable unless ``serializable``);
        a compacted revision raises Compacted, a future one FutureRevision."""
        req = _convert.range_request(key, range_end, **options)
        return _convert.range_result(await self._range(req))

    async def list_prefix(self, prefix: bytes, **options: Unpack[RangeOptions]) -> RangeResult:
        """``range(prefix, prefix_end(prefix), **options)``."""
        return await self.range(prefix, prefix_end(prefix), **options)

    async def _txn(self, request: rpc_pb2.TxnRequest) -> rpc_pb2.TxnResponse:
        resp: rpc_pb2.TxnResponse = await self._call("kv", "Txn", request, idempotent=True)
        return resp

    async def create(self, key: bytes, value: bytes, *, lease: int = 0) -> TxnResult:
        """Put ``key`` only if absent. Failure: ``kv`` is the existing value."""
        req = _convert.guarded_put(key, value, 0, lease)
        return _convert.put_txn_result(await self._txn(req), key, value, lease)

    async def optimistic_put(
        self, key: bytes, value: bytes, expected_mod_revision: int, *, lease: int = 0
    ) -> TxnResult:
        """Put only if the key's mod_revision is ``expected_mod_revision`` (0: absent).
        Failure: ``kv`` is the current value (None if absent)."""
        req = _convert.guarded_put(key, value, expected_mod_revision, lease)
        return _convert.put_txn_result(await self._txn(req), key, value, lease)

    async def optimistic_delete(self, key: bytes, expected_mod_revision: int) -> TxnResult:
        """Delete only if the key's mod_revision is ``expected_mod_revision``. Success:
        ``kv`` is the deleted value; failure: the current value (None if absent)."""
        req = _convert.guarded_delete(key, expected_mod_revision)
        return _convert.delete_txn_result(await self._txn(req))

    async def put(self, key: bytes, value: bytes, *, lease: int = 0) -> int:
        """Unconditional put; returns its revision. Not retried once sent (see module)."""
        req = rpc_pb2.PutRequest(key=key, value=value, lease=lease)
        resp = await self._call("kv", "Put", req, idempotent=False)
        return int(resp.header.revision)

    async def delete(self, key: bytes, range_end: bytes | None = None) -> tuple[int, int]:
        """Delete ``key`` (or [key, range_end)); returns (revision, number deleted)."""
        req = rpc_pb2.DeleteRangeRequest(key=key, range_end=range_end or b"")
        resp = await self._call("kv", "DeleteRange", req, idempotent=False)
        return int(resp.header.revision), int(resp.deleted)

    async def compact(self, revision: int, *, physical: bool = False) -> int:
        """Compact history before ``revision``; returns the header revision.
        Compacted if already compacted at or past it, FutureRevision if beyond."""
        req = rpc_pb2.CompactionRequest(revision=revision, physical=physical)
        try:
            resp = await self._call("kv", "Compact", req, idempotent=False)
        except RevisionOutOfRange:
            raise await self._resolve_out_of_range(b"\x00", revision) from None
        return int(resp.header.revision)

    # -- cluster, maintenance ------------------------------------------------------------

    async def status(self, endpoint: str | None = None) -> Status:
        """Status of ``endpoint`` (one of ``endpoints``; not retried elsewhere), else of
        whichever endpoint answers (failing over like a read)."""
        ep, resp = await self._invoke(
            "maintenance", "Status", rpc_pb2.StatusRequest(), True, endpoint
        )
        return _convert.status(ep.url, resp)

    async def member_list(self) -> list[Member]:
        resp = await self._call(
            "cluster", "MemberList", rpc_pb2.MemberListRequest(), idempotent=True
        )
        return [_convert.member(m) for m in resp.members]

    # -- leases ----------------------------------------------------------------------

    async def lease_grant(self, ttl: int) -> Lease:
        resp = await self._call(
            "lease", "LeaseGrant", rpc_pb2.LeaseGrantRequest(TTL=ttl), idempotent=False
        )
        if resp.error:
            raise EtcdError(f"lease grant refused: {resp.error}")
        return Lease(int(resp.ID), int(resp.TTL), int(resp.header.revision))

    async def lease_revoke(self, lease_id: int) -> None:
        """Revoke the lease, deleting its keys; NotFound if it does not exist."""
        req = rpc_pb2.LeaseRevokeRequest(ID=lease_id)
        await self._call("lease", "LeaseRevoke", req, idempotent=False)

    def lease_keepalive(self, lease_id: int) -> LeaseKeepAlive:
        """An async context manager keeping ``lease_id`` alive while entered."""
        self._check_open()
        return LeaseKeepAlive(
            self._pool, lease_id, self._keepalive_tasks,
            request_timeout=self.request_timeout, dial_timeout=self.dial_timeout,
        )  # fmt: skip

    # -- watches -----------------------------------------------------------------------

    def watch(
        self,
        key: bytes,
        range_end: bytes | None = None,
        *,
        start_revision: int = 0,
        prev_kv: bool = False,
        progress_notify: bool = False,
        filters: Sequence[str] = (),
        buffer_size: int = 1024,
        stream: str = "",
    ) -> Watch:
        """Watch [key, range_end) from ``start_revision`` (0: from now). See ``Watch`` and
        ``etcdclient.watch`` for ordering, resumption, lagging and errors. ``filters``:
        "NOPUT", "NODELETE". ``stream``: the name of the gRPC watch stream it shares
        with the other watches of that name (see ``request_progress``). Must be called
        with the event loop running."""
        self._check_open()
        watches = self._stream(stream)
        w = Watch(
            watches, key, range_end, start_revision=start_revision, prev_kv=prev_kv,
            progress_notify=progress_notify, filters=filters, buffer_size=buffer_size,
        )  # fmt: skip
        watches.add(w)
        return w

    def _stream(self, name: str) -> WatchStream:
        found = self._watch_streams.get(name)
        if found is None:
            found = self._watch_streams[name] = WatchStream(
                self._pool, request_timeout=self.request_timeout, dial_timeout=self.dial_timeout
            )
        return found

    async def request_progress(self, stream: str = "") -> None:
        """Ask etcd for a progress notification on the watch stream ``stream``: every
        watch of it that is caught up then receives a WatchBatch with ``progress_notify``
        True. etcd answers only when *every* watch of the stream is synced (it drops the
        request otherwise), so a watch catching up a long backlog denies progress to the
        others of its stream: callers that need progress give their watches a stream of
        their own."""
        self._check_open()
        self._stream(stream).request_progress()
