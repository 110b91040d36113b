"""Lease keep-alive: an async context manager that keeps one lease alive.

A task (owned by the client, cancelled by ``close()`` or on leaving the context) opens a
LeaseKeepAlive stream, sends a keep-alive every TTL/3 seconds and reads etcd's answer.
A broken stream is re-opened on another endpoint with capped backoff. When etcd answers
TTL <= 0 the lease is gone: ``expired`` becomes True and the task ends.
"""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType
from typing import Any

import grpc

from etcdclient._endpoints import EndpointPool
from etcdclient._pb import rpc_pb2
from etcdclient._translate import translate
from etcdclient.errors import EtcdError

__all__ = ["LeaseKeepAlive"]

_BACKOFF_INITIAL = 0.05
_BACKOFF_MAX = 2.0
_MIN_INTERVAL = 0.2


class LeaseKeepAlive:
    """Keeps ``lease_id`` alive while the context is entered.

    ``ttl`` is the TTL etcd last granted (0 before the first answer); ``expired`` is True
    once etcd reported the lease gone. ``wait_expired()`` returns when that happens."""

    def __init__(
        self, pool: EndpointPool, lease_id: int, tasks: set[asyncio.Task[None]], *,
        request_timeout: float, dial_timeout: float,
    ) -> None:  # fmt: skip
        self.lease_id = lease_id
        self.ttl = 0
        self.expired = False
        self._pool = pool
        self._tasks = tasks
        self._request_timeout = request_timeout
        self._dial_timeout = dial_timeout
        self._task: asyncio.Task[None] | None = None
        self._first = asyncio.Event()
        self._expired = asyncio.Event()

    async def __aenter__(self) -> LeaseKeepAlive:
        self.start()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._request_timeout):
                await self._first.wait()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"etcd-keepalive-{self.lease_id:x}"
            )
            self._tasks.add(self._task)
            self._task.add_done_callback(self._tasks.discard)

    async def stop(self) -> None:
        if self._task is not None:
            task, self._task = self._task, None
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def wait_expired(self) -> None:
        await self._expired.wait()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        backoff = _BACKOFF_INITIAL
        while not self.expired:
            try:
                ep = await self._pool.ready(loop.time() + self._dial_timeout)
                call: Any = ep.lease.LeaseKeepAlive()
                try:
                    await self._keep(call)
                    backoff = _BACKOFF_INITIAL
                finally:
                    call.cancel()
            except grpc.aio.AioRpcError as e:
                self._pool.failed(ep, str(translate(e)))
            except (EtcdError, TimeoutError):
                pass
            if not self.expired:
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, _BACKOFF_MAX)

    async def _keep(self, call: Any) -> None:
        while True:
            await call.write(rpc_pb2.LeaseKeepAliveRequest(ID=self.lease_id))
            async with asyncio.timeout(self._request_timeout):
                resp = await call.read()
            if resp is grpc.aio.EOF:
                return
            self._first.set()
            if resp.TTL <= 0:
                self.ttl = 0
                self.expired = True
                self._expired.set()
                return
            self.ttl = resp.TTL
            await asyncio.sleep(max(resp.TTL / 3, _MIN_INTERVAL))
