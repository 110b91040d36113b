"""``kube-system/kube-apiserver-legacy-service-account-token-tracking``, as
kube-apiserver's legacy-token-tracking controller keeps it
(``pkg/controlplane/controller/legacytokentracking``): ``since`` is the UTC date
(``2006-01-02``) from which this control plane tracks the use of Secret-based
service-account tokens. kube-controller-manager's legacy token cleaner reads it (and
logs an error every sync while it is missing).

The post-start hook ``start-legacy-token-tracking-controller`` creates it when absent
and rewrites a ``since`` that is not a date, then looks again every minute (a deleted
ConfigMap comes back; the date of an existing one is never moved). Like upstream's hook
it does not hold ``/readyz``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from proxy.loopback.client import resource_path
from storage.interfaces import JSONObject

if TYPE_CHECKING:
    from proxy.server.post_start_hooks import PostStartHookContext

__all__ = ["LEGACY_TOKEN_TRACKING_HOOK", "track_legacy_tokens"]

log = logging.getLogger("watchcache.proxy")

LEGACY_TOKEN_TRACKING_HOOK = "start-legacy-token-tracking-controller"
NAME = "kube-apiserver-legacy-service-account-token-tracking"
NAMESPACE, KEY = "kube-system", "since"
INTERVAL = 60.0


def _today() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")


def _is_date(value: object) -> bool:
    try:
        dt.datetime.strptime(str(value), "%Y-%m-%d")
    except ValueError:
        return False
    return True


def _reconcile(current: JSONObject) -> JSONObject | None:
    """The stored ConfigMap with a valid ``since`` (None: it has one)."""
    data = dict(current.get("data") or {})
    if _is_date(data.get(KEY)):
        return None
    data[KEY] = _today()
    return {**current, "data": data}


async def track_legacy_tokens(
    hook: PostStartHookContext, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
) -> None:
    """The hook: keep the ConfigMap (errors are retried on the next round)."""
    collection = resource_path("", "v1", "configmaps", NAMESPACE)
    while True:
        meta = {"name": NAME, "namespace": NAMESPACE}
        obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {KEY: _today()}}
        try:
            await hook.loopback.ensure(collection, obj, _reconcile)
        except Exception as e:  # etcd down, kube-system not there yet: next round
            log.info("writing %s/%s: %s (will retry)", NAMESPACE, NAME, e)
        await sleep(INTERVAL)
