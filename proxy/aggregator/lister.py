"""The APIServices in memory (upstream's APIService informer and lister): the
``apiservices`` shared informer, with each APIService parsed once into an
``APIServiceRef`` when its event arrives.

``objects`` is the informer's indexer (name -> stored object); ``refs`` the parsed
forms, kept by the informer's handlers. Listeners added with ``on_change`` are called
synchronously after every change (the proxy's routing table and discovery rebuild
from them, the availability controller enqueues the name). ``synced`` is set by
``run`` once the informer has synced.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from proxy.aggregator.apiservice import GROUP, APIServiceRef, parse
from proxy.informer import (
    DeletedFinalStateUnknown,
    EventHandlers,
    SharedInformerFactory,
    deletion_handling_key,
)

__all__ = ["APIServiceLister"]

log = logging.getLogger("watchcache.aggregator")

JSON = dict[str, Any]


class APIServiceLister:
    """name -> the stored APIService object (and its parsed ``APIServiceRef``)."""

    def __init__(self, informers: SharedInformerFactory) -> None:
        self.informer = informers.informer_for(GROUP, "apiservices")
        self.refs: dict[str, APIServiceRef] = {}
        self.synced = asyncio.Event()
        self._listeners: list[Callable[[str], None]] = []
        self.informer.add_event_handler(
            EventHandlers(
                on_add=self._set, on_update=lambda old, new: self._set(new), on_delete=self._gone
            )
        )

    @property
    def objects(self) -> dict[str, JSON]:
        """name -> the stored APIService (a snapshot of the indexer: read-only objects)."""
        indexer = self.informer.indexer
        return {k: o for k in indexer.list_keys() if (o := indexer.get_by_key(k)) is not None}

    def on_change(self, listener: Callable[[str], None]) -> None:
        """``listener(name)`` after every change of an APIService."""
        self._listeners.append(listener)

    def by_group_version(self, group: str, version: str) -> APIServiceRef | None:
        """The APIService of ``group``/``version`` (its name is ``version.group``)."""
        return self.refs.get(f"{version}.{group}")

    def _set(self, obj: JSON) -> None:
        ref = parse(obj)
        self.refs[ref.name] = ref
        self._changed(ref.name)

    def _gone(self, obj: JSON | DeletedFinalStateUnknown) -> None:
        name = deletion_handling_key(obj)
        self.refs.pop(name, None)
        self._changed(name)

    def _changed(self, name: str) -> None:
        for listener in self._listeners:
            try:
                listener(name)
            except Exception:  # one listener's bug must not stop the others
                log.exception("APIService listener failed")

    async def run(self) -> None:
        """Set ``synced`` once the informer (run by its factory) has synced."""
        await self.informer.wait_for_sync()
        self.synced.set()
