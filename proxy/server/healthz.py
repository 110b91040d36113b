"""Health endpoints as kube-apiserver's: ``/healthz``, ``/livez``, ``/readyz`` and one
path per check (``/readyz/etcd``).

Each endpoint runs its checks; ``?verbose`` lists them (``[+]etcd ok``), ``?exclude=etcd``
skips one. A failing check makes the endpoint answer 500 and always list the checks,
ending ``<name> check failed``; success answers ``ok`` (or the list, ending
``<name> check passed``).

- ``etcd``: a quorum read of etcd's revision within a short deadline. Part of healthz
  and readyz: readyz fails while etcd is unreachable.
- ``poststarthook/<name>`` (readyz only), one per post-start hook
  (``proxy.server.post_start_hooks``), listed in the order they were added: fails until
  the hook is up (a one-shot writer done: ``start-system-namespaces-controller``,
  ``rbac/bootstrap-roles``, ``priority-and-fairness-config-producer``,
  ``scheduling/bootstrap-system-priority-classes``; a controller synced) and again
  while it is down after a crash (``[-]poststarthook/NAME failed: reason withheld``).
- ``informer-sync`` (readyz only, upstream's): fails until every shared informer
  (``proxy.informer``) has synced, and while one is down after a crash (its
  supervisor restarts it).
- ``poststarthook/storage-readiness`` (readyz only): fails until every resource's watch
  cache (all built at start-up) has been ready once, as kube-apiserver's hook of that
  name; passes at once with ``--watch-cache=false``.
- ``watch-cache`` (readyz only, ours): fails while a watch cache restarts after an
  unexpected error in its tasks; its line names each such cache and the error
  (``[-]watch-cache failed: watch cache of pods is restarting after reflector failed:
  ...``). Caches merely re-listing (after a compaction) or still priming do not fail it.
- ``autoregister-completion`` (readyz only): fails until the local APIServices of the
  built-in group-versions are stored (``proxy.aggregator.autoregister``), as upstream's.
- ``shutdown``: fails once shutdown has begun (readyz only), so load balancers drain.
- livez has no etcd check: restarting this server does not bring etcd back, and it
  recovers by itself when etcd returns.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from cacher.metrics import corrupt_objects
from proxy.endpoints.context import API_CONTEXT, APIContext
from proxy.server.post_start_hooks import POST_START_HOOKS

__all__ = ["setup_health_routes"]

log = logging.getLogger("watchcache.proxy")

Check = Callable[[APIContext], Awaitable[None]]  # raises on failure

ETCD_CHECK_TIMEOUT = 2.0


async def _ping(ctx: APIContext) -> None:
    return None


async def _etcd(ctx: APIContext) -> None:
    async with asyncio.timeout(min(ETCD_CHECK_TIMEOUT, ctx.settings.etcd_request_timeout)):
        await ctx.storage_ctx.etcd3().current_resource_version()


async def _shutdown(ctx: APIContext) -> None:
    if ctx.shutting_down:
        raise RuntimeError("server is shutting down")


async def _informer_sync(ctx: APIContext) -> None:
    missing = ctx.informers.not_synced()
    if missing:
        raise RuntimeError(f"{len(missing)} informers not started yet: {missing}")


async def _storage_readiness(ctx: APIContext) -> None:
    if not ctx.storages.caches_ready():
        raise RuntimeError("watch caches not initialized yet")


class _Named(RuntimeError):
    """A failed check whose reason is shown in the listing instead of withheld."""


async def _watch_caches(ctx: APIContext) -> None:
    failed = [err.message for err in ctx.storages.not_ready() if err.failure]
    if failed:
        raise _Named("; ".join(failed))


async def _autoregister(ctx: APIContext) -> None:
    if ctx.aggregator is not None and not ctx.aggregator.autoregistered():
        raise RuntimeError("the local APIServices are not registered yet")


STORAGE_READINESS_CHECK = "poststarthook/storage-readiness"

CHECKS: dict[str, list[tuple[str, Check]]] = {
    "healthz": [("ping", _ping), ("log", _ping), ("etcd", _etcd)],
    "livez": [("ping", _ping), ("log", _ping)],
    "readyz": [
        ("ping", _ping),
        ("log", _ping),
        ("etcd", _etcd),
        ("informer-sync", _informer_sync),
        (STORAGE_READINESS_CHECK, _storage_readiness),
        ("watch-cache", _watch_caches),
        ("autoregister-completion", _autoregister),  # proxy.aggregator.autoregister
        ("shutdown", _shutdown),
    ],
}


async def _run(ctx: APIContext, name: str, check: Check) -> str | None:
    """None when the check passed, else the reason shown ("reason withheld" unless the
    check names it)."""
    try:
        await check(ctx)
    except _Named as e:
        log.warning("%s check failed: %s", name, e)
        return str(e)
    except Exception as e:  # any failure of a check is a failed check, not a 500 trace
        log.warning("%s check failed: %s", name, e or type(e).__name__)
        return "reason withheld"
    return None


def _hook_check(check: Callable[[], None]) -> Check:
    async def run(ctx: APIContext) -> None:
        check()

    return run


def _checks(app: web.Application, endpoint: str) -> list[tuple[str, Check]]:
    """The endpoint's checks; readyz's with one per post-start hook before ``shutdown``."""
    checks = CHECKS[endpoint]
    hooks = app.get(POST_START_HOOKS)
    if endpoint != "readyz" or hooks is None:
        return checks
    added = [(name, _hook_check(check)) for name, check in hooks.checks()]
    return [*checks[:-1], *added, checks[-1]]


async def _endpoint(request: web.Request, endpoint: str) -> web.Response:
    ctx = request.app[API_CONTEXT]
    only = request.match_info.get("check")
    excluded = set(request.query.getall("exclude", []))
    checks = [(n, c) for n, c in _checks(request.app, endpoint) if n not in excluded]
    if only is not None:
        checks = [(n, c) for n, c in checks if n == only]
        if not checks:
            return web.Response(status=404, text="404 page not found\n")
    results = await asyncio.gather(*(_run(ctx, n, c) for n, c in checks))
    ok = all(r is None for r in results)
    if only is not None:
        return web.Response(
            status=200 if ok else 500,
            text="ok" if ok else f"internal server error: {only} check failed\n",
        )
    if ok and "verbose" not in request.query:
        return web.Response(text="ok")
    notes = _notes()
    lines = [
        (f"[+]{n} ok" + (f": {notes[n]}" if n in notes else ""))
        if reason is None
        else f"[-]{n} failed: {reason}"
        for (n, _), reason in zip(checks, results, strict=True)
    ]
    lines.append(f"{endpoint} check {'passed' if ok else 'failed'}")
    return web.Response(status=200 if ok else 500, text="\n".join(lines) + "\n")


def _notes() -> dict[str, str]:
    """What a passing check shows after ``ok`` in a verbose listing: the keys the watch
    caches skip because their newest value in etcd cannot be decoded (an operator's
    business, not a reason to take the server out of a load balancer: every replica
    reads the same etcd)."""
    corrupt = corrupt_objects()
    if not corrupt:
        return {}
    text = ", ".join(f"{r}: {n}" for r, n in sorted(corrupt.items()))
    return {"watch-cache": f"objects in etcd that cannot be decoded, not served ({text})"}


def setup_health_routes(app: web.Application) -> None:
    for endpoint in CHECKS:

        async def handler(request: web.Request, _e: str = endpoint) -> web.Response:
            return await _endpoint(request, _e)

        app.router.add_get(f"/{endpoint}", handler)
        app.router.add_get(f"/{endpoint}/{{check:.+}}", handler)
