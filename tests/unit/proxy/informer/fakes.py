"""A scripted lister-watcher and helpers for the informer tests (no server, no sleep)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from proxy.informer import SharedIndexInformer, SharedInformerFactory
from proxy.informer.lister_watcher import ListResult, WatchEvent, WatchStream

JSON = dict[str, Any]


def obj(name: str, rv: int, namespace: str = "", **extra: Any) -> JSON:
    meta: JSON = {"name": name, "resourceVersion": str(rv)}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta, **extra}


_END = object()


class FakeStream:
    """A watch the test feeds: ``send`` an event, ``fail`` with an error, ``end``."""

    def __init__(self, resource_version: str) -> None:
        self.resource_version = resource_version
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self.stopped = False

    def send(self, type_: str, o: JSON) -> None:
        self._queue.put_nowait(WatchEvent(type_, o))  # type: ignore[arg-type]

    def fail(self, error: Exception) -> None:
        self._queue.put_nowait(error)

    def end(self) -> None:
        self._queue.put_nowait(_END)

    async def __aiter__(self) -> AsyncIterator[WatchEvent]:
        while True:
            item = await self._queue.get()
            if item is _END:
                return
            if isinstance(item, Exception):
                raise item
            assert isinstance(item, WatchEvent)
            yield item

    async def stop(self) -> None:
        self.stopped = True


class FakeListerWatcher:
    """Answers LISTs from ``list_answers`` (a ListResult or an exception each, in
    order) and opens a ``FakeStream`` per WATCH (or raises from ``watch_errors``)."""

    def __init__(self) -> None:
        self.list_answers: list[ListResult | Exception] = []
        self.watch_errors: list[Exception] = []
        self.lists: list[str] = []  # the resourceVersion of each LIST
        self.streams: list[FakeStream] = []
        self.watch_rvs: list[str] = []  # of each WATCH asked for (opened or not)

    def answer(self, rv: int, *items: JSON) -> None:
        self.list_answers.append(ListResult(list(items), str(rv)))

    async def list(self, resource_version: str) -> ListResult:
        self.lists.append(resource_version)
        answer = self.list_answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def watch(self, resource_version: str, *, timeout_seconds: float) -> WatchStream:
        assert 300 <= timeout_seconds < 600
        self.watch_rvs.append(resource_version)
        if self.watch_errors:
            raise self.watch_errors.pop(0)
        stream = FakeStream(resource_version)
        self.streams.append(stream)
        return stream


async def until(condition: Callable[[], bool], turns: int = 200) -> None:
    """Let the event loop run until ``condition`` holds (no wall-clock wait)."""
    for _ in range(turns):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never held")


def fake_factory() -> SharedInformerFactory:
    """A factory whose informers are never started: tests feed them with ``deliver``
    and ``replace`` (what a reflector would call)."""
    return SharedInformerFactory(lambda group, resource: FakeListerWatcher())


def deliver(informer: SharedIndexInformer, kind: str, o: JSON) -> None:
    """One watch event, as the reflector hands it to the informer."""
    {"ADDED": informer.add, "MODIFIED": informer.update, "DELETED": informer.delete}[kind](o)
