"""``/debug/watchcache`` and ``/debug/requests``: what the lab's page shows, as JSON.

- ``GET /debug/watchcache``: etcd's current revision and, per watch cache, its resource,
  objects held, resourceVersion, history window (oldest deliverable resourceVersion,
  events held, capacity), open watchers and their lag (how far each is behind the
  cache: events buffered for it), events dispatched, and its index; with
  ``?memory=1`` also the objects' JSON bytes and all the bytes the cache keeps for
  them (``cacher.objects.held_bytes``);
- ``GET /debug/requests?since=N``: the access-log entries numbered above N (the last
  500 are kept): verb, path, code, ms, userAgent, and for LISTs where they were served
  from and the objects fetched/returned.

``/debug/watchcache`` also says which protobuf decoder serves (``protobufDecoder``: "C",
or why the Python one does: ``storage.protobuf.native.status()``).

kube-apiserver keeps its own introspection under ``/debug`` (pprof, flags) too; these
are this server's, read-only and cheap (no etcd read but one revision query).
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from cacher.btree import extra_bytes
from cacher.objects import held_bytes
from proxy.endpoints import responsewriters
from proxy.endpoints.context import API_CONTEXT
from proxy.endpoints.metrics import RECENT_REQUESTS, RecentRequests
from storage.protobuf import native

__all__ = ["setup_debug_routes"]

JSON = dict[str, Any]
REVISION_TIMEOUT = 2.0


def _cache_state(resource: str, cacher: Any) -> JSON:
    history = cacher.history
    watchers = cacher.dispatcher.watchers()
    state = {
        "resource": resource,
        "objects": len(cacher.cache),
        "resourceVersion": cacher.resource_version,
        "ready": bool(cacher.ready.check()),
        "history": {"oldest": history.oldest_deliverable(), "size": len(history),
                    "capacity": history.capacity},
        "watchers": len(watchers),
        "lag": sorted((w.pending for w in watchers), reverse=True)[:5],
        "dispatched": cacher.dispatcher.dispatched,
        "index": cacher.dispatcher.index_field,
    }
    snapshots = cacher.snapshots
    if snapshots is not None:
        state["snapshots"] = {"count": len(snapshots), "oldest": snapshots.oldest}
    return state


# objects measured by ?memory=1 in one turn of the event loop
MEMORY_SLICE = 2000


async def _memory(state: JSON, cacher: Any) -> None:
    """``?memory=1``: a walk over every object, in slices with a turn of the loop
    between them (one cache of 10,000 pods in one step held the loop ~25 ms)."""
    objects = list(cacher.cache.objects())  # the versions held now
    json_bytes = held = 0
    for start in range(0, len(objects), MEMORY_SLICE):
        for j, h in map(held_bytes, objects[start : start + MEMORY_SLICE]):
            json_bytes, held = json_bytes + j, held + h
        await asyncio.sleep(0)
    state["jsonBytes"], state["heldBytes"] = json_bytes, held
    snapshots = cacher.snapshots
    if snapshots is not None:
        nodes, extra = extra_bytes(snapshots.held(), cacher.cache.store)
        state["snapshots"].update(nodes=nodes, bytes=extra)


async def _watchcache(request: web.Request) -> web.Response:
    ctx = request.app[API_CONTEXT]
    memory = request.query.get("memory") in ("1", "true")
    caches = []
    for rs in ctx.storages.built():
        cacher = getattr(rs.store, "cacher", None)
        if cacher is not None:
            caches.append(_cache_state(rs.resource.qualified, cacher))
            if memory:
                await _memory(caches[-1], cacher)
    revision = None
    try:
        async with asyncio.timeout(REVISION_TIMEOUT):
            key = ctx.settings.etcd_prefix.encode()
            revision = (await ctx.storage_ctx.client.get(key)).revision
    except Exception:  # etcd down: the page shows the caches without it
        revision = None
    return responsewriters.json_response({"etcdRevision": revision,
                                      "protobufDecoder": native.status(),
                                      "caches": sorted(caches, key=lambda c: c["resource"])})


async def _requests(request: web.Request) -> web.Response:
    recent = request.app[RECENT_REQUESTS]
    try:
        since = int(request.query.get("since", "0"))
    except ValueError:
        since = 0
    return responsewriters.json_response({"seq": recent.seq, "items": recent.since(since)})


def setup_debug_routes(app: web.Application) -> None:
    app[RECENT_REQUESTS] = RecentRequests()
    app.router.add_get("/debug/watchcache", _watchcache)
    app.router.add_get("/debug/requests", _requests)
