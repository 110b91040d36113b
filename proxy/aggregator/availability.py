"""The ``Available`` condition of every APIService (kube-aggregator's
``AvailableConditionController`` and its local counterpart).

Each APIService is checked every ``interval`` seconds (and at once when the lister
reports a change), in one owned task:

- local (no ``spec.service``): True, ``Local``, ``Local APIServices are always available``;
- the Service is missing: False, ``ServiceNotFound``,
  ``service/<name> in "<namespace>" is not present``;
- a ClusterIP Service without that port: False, ``ServicePortError``,
  ``service/<name> in "<namespace>" is not listening on port <port>``;
- with ``--enable-aggregator-routing``, no endpoint address: False,
  ``MissingEndpoints``, ``endpoints for service/<name> in "<namespace>" have no
  addresses with port name "<port name>"``;
- the backend's ``/apis/<group>/<version>`` not answering 2xx within 5 s (with the
  front-proxy certificate, as ``system:kube-aggregator``): False,
  ``FailedDiscoveryCheck``, ``failing or missing response from <url>: <error>``;
- otherwise True, ``Passed``, ``all checks passed``.

The condition is written through ``/status`` semantics (``guaranteed_update`` on the
stored object) only when it changed; ``lastTransitionTime`` moves only when the status
flips. Cancelling ``run`` stops the checks (the app's cleanup does it on shutdown). Each
round also sets upstream's ``aggregator_unavailable_apiservice`` metrics
(``proxy.aggregator.metrics``).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from typing import Any, Protocol

import aiohttp

from proxy.aggregator import metrics
from proxy.aggregator.apiservice import (
    LOCAL_MESSAGE,
    LOCAL_REASON,
    APIServiceRef,
    available_condition,
    set_condition,
)
from proxy.aggregator.lister import APIServiceLister
from proxy.aggregator.proxy_handler import Backends, go_dial_error
from proxy.aggregator.service_resolver import ResolveError
from proxy.aggregator.transport import REMOTE_GROUP, REMOTE_USER
from proxy.registry.storage_factory import ResourceStorage
from storage import errors as serr

__all__ = ["AvailabilityController", "check"]

log = logging.getLogger("watchcache.aggregator")

JSON = dict[str, Any]
DISCOVERY_TIMEOUT = 5.0
AGGREGATOR_USER = "system:kube-aggregator"


class AvailabilityDeps(Backends, Protocol):
    """What the controller reads and writes through (the ``Aggregator`` of
    ``proxy.aggregator.server``)."""

    endpoint_routing: bool
    lister: APIServiceLister

    def storage(self) -> ResourceStorage: ...

    async def get(self, group: str, plural: str, namespace: str, name: str) -> JSON | None: ...

    async def refresh_discovery(self, ref: APIServiceRef) -> None: ...


async def _service_checks(aggregator: AvailabilityDeps, ref: APIServiceRef) -> JSON | None:
    """The condition when the Service (or its endpoints) rule the backend out."""
    where = f'service/{ref.service_name} in "{ref.service_namespace}"'
    service = await aggregator.get("", "services", ref.service_namespace, ref.service_name)
    if service is None:
        return available_condition("False", "ServiceNotFound", f"{where} is not present")
    spec = service.get("spec") or {}
    if (spec.get("type") or "ClusterIP") != "ClusterIP":
        return None
    ports = [p for p in spec.get("ports") or [] if p.get("port") == ref.service_port]
    if not ports:
        return available_condition(
            "False", "ServicePortError", f"{where} is not listening on port {ref.service_port}"
        )
    if aggregator.endpoint_routing:
        try:
            await aggregator.resolve(ref)
        except ResolveError:
            port_name = ports[0].get("name") or ""
            return available_condition(
                "False",
                "MissingEndpoints",
                f'endpoints for {where} have no addresses with port name "{port_name}"',
            )
    return None


async def _discovery_check(aggregator: AvailabilityDeps, ref: APIServiceRef) -> JSON:
    try:
        target = await aggregator.resolve(ref)
    except ResolveError as e:
        return available_condition(
            "False", "FailedDiscoveryCheck", f"failing or missing response: {e}"
        )
    url = f"{target.base_url}/apis/{ref.group}/{ref.version}"
    try:
        session = aggregator.transport.session(ref.ca_bundle, ref.insecure_skip_tls_verify)
        async with asyncio.timeout(DISCOVERY_TIMEOUT):
            async with session.get(
                url,
                server_hostname=target.server_name,
                headers={REMOTE_USER: AGGREGATOR_USER, REMOTE_GROUP: "system:masters"},
                allow_redirects=False,
            ) as resp:
                await resp.read()
                status = resp.status
    except TimeoutError:
        message = f'Get "{url}": context deadline exceeded'
        return available_condition("False", "FailedDiscoveryCheck", _failing(url, message))
    except (aiohttp.ClientError, OSError, ValueError) as e:
        message = f'Get "{url}": {go_dial_error(target.host, target.port, e)}'
        return available_condition("False", "FailedDiscoveryCheck", _failing(url, message))
    if not 200 <= status < 300:
        message = f"bad status from {url}: {status}"
        return available_condition("False", "FailedDiscoveryCheck", _failing(url, message))
    return available_condition("True", "Passed", "all checks passed")


def _failing(url: str, message: str) -> str:
    return f"failing or missing response from {url}: {message}"


async def check(aggregator: AvailabilityDeps, ref: APIServiceRef) -> JSON:
    """The ``Available`` condition ``ref`` has now (see the module docstring)."""
    if ref.local:
        return available_condition("True", LOCAL_REASON, LOCAL_MESSAGE)
    found = await _service_checks(aggregator, ref)
    return found if found is not None else await _discovery_check(aggregator, ref)


class AvailabilityController:
    """Checks every APIService periodically and writes its condition when it changed."""

    def __init__(self, aggregator: AvailabilityDeps, interval: float = 10.0) -> None:
        self.aggregator = aggregator
        self.interval = interval
        self._wake = asyncio.Event()
        self._exported: set[str] = set()  # APIService names with a gauge series

    def wake(self) -> None:
        """Check again now (the lister calls this on every change)."""
        self._wake.set()

    async def _write(self, name: str, cond: JSON) -> None:
        rs = self.aggregator.storage()
        key = rs.object_key("", name)

        async def apply(obj: JSON) -> JSON:
            out = copy.deepcopy(obj)
            set_condition(out, cond)
            return out

        with contextlib.suppress(serr.NotFound):  # deleted meanwhile
            await rs.store.guaranteed_update(key, None, apply)

    async def sync_once(self) -> None:
        lister = self.aggregator.lister
        refs = list(lister.refs.items())
        # concurrently: one backend that hangs (5 s) does not hold up the others
        # (every check ends before gather returns: no task outlives the round)
        results = await asyncio.gather(
            *(check(self.aggregator, ref) for _, ref in refs), return_exceptions=True
        )
        available: dict[str, bool] = {}
        for (name, ref), cond in zip(refs, results, strict=True):
            if isinstance(cond, serr.StorageError):
                log.info("APIService %s: %s (will retry)", name, cond)
                continue
            if isinstance(cond, BaseException):
                raise cond
            available[name] = cond["status"] == "True"
            if cond["reason"] == "Passed":
                await self.aggregator.refresh_discovery(ref)
            current = copy.deepcopy(lister.objects.get(name) or {})
            if set_condition(current, cond):
                await self._write(name, cond)
                if cond["status"] != "True":
                    metrics.record_unavailable(name, cond["reason"])
        self._exported = metrics.set_unavailable(available, self._exported)

    async def run(self) -> None:
        """Check until cancelled; storage errors are retried at the next round."""
        await self.aggregator.lister.synced.wait()
        while True:
            self._wake.clear()
            try:
                await self.sync_once()
            except serr.StorageError as e:
                log.info("APIService availability: %s (will retry)", e)
            try:
                async with asyncio.timeout(self.interval):
                    await self._wake.wait()
            except TimeoutError:
                pass
