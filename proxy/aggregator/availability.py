"""The ``Available`` condition of every APIService (kube-aggregator's
``AvailableConditionController`` and its local counterpart).

Each APIService is a key of a work queue: enqueued when the lister reports a change
to it, reconciled by one of ``WORKERS`` workers (a backend that hangs for its 5 s holds
up only its own key), and enqueued again ``interval`` seconds after each check (the
Services and endpoints it depends on have no informer here to wake it). A check is:

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

The condition is written to ``/status`` through the loopback client only when it
changed; ``lastTransitionTime`` moves only when the status
flips. A failed check or write requeues the key with the queue's backoff. Cancelling ``run``
stops the checks (the app's cleanup does it on shutdown). Each check also sets
upstream's ``aggregator_unavailable_apiservice`` metrics (``proxy.aggregator.metrics``).
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable
from typing import Any, Protocol

import aiohttp

from proxy.admission.webhook.dial_errors import go_dial_error
from proxy.admission.webhook.service_resolver import ResolveError
from proxy.aggregator import metrics
from proxy.aggregator.apiservice import (
    GROUP,
    LOCAL_MESSAGE,
    LOCAL_REASON,
    APIServiceRef,
    available_condition,
    set_condition,
)
from proxy.aggregator.lister import APIServiceLister
from proxy.aggregator.proxy_handler import Backends
from proxy.aggregator.transport import REMOTE_GROUP, REMOTE_USER
from proxy.informer import WorkQueue, run_workers
from proxy.loopback.client import LoopbackClient, resource_path

__all__ = ["AvailabilityController", "check"]

log = logging.getLogger("watchcache.aggregator")

JSON = dict[str, Any]
DISCOVERY_TIMEOUT = 5.0
WORKERS = 5  # kube-aggregator's availability controller runs five
AGGREGATOR_USER = "system:kube-aggregator"


class AvailabilityDeps(Backends, Protocol):
    """What the controller reads through (the ``Aggregator`` of
    ``proxy.aggregator.server``); it writes through the loopback client."""

    endpoint_routing: bool
    lister: APIServiceLister

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
        self.queue: WorkQueue[str] = WorkQueue("apiservice-availability")
        self.client: LoopbackClient | None = None
        # whether this process writes the conditions (``--workers``: the Lease holder
        # alone; every worker still checks, for its own discovery and metrics)
        self.leads: Callable[[], bool] = lambda: True

    def enqueue(self, name: str) -> None:
        """Check ``name`` now (the lister calls this on every change)."""
        self.queue.add(name)

    async def _write(self, name: str, cond: JSON) -> None:
        assert self.client is not None, "run() sets the client"

        def apply(obj: JSON) -> JSON | None:
            return obj if set_condition(obj, cond) else None

        # None: deleted meanwhile; a failure raises (the queue retries the key)
        await self.client.update(resource_path(GROUP, "v1", "apiservices", name=name,
                                               sub="status"), apply)  # fmt: skip

    async def reconcile(self, name: str) -> None:
        """Check ``name`` and write its condition if it changed; check it again after
        ``interval`` (a storage error raises: the queue retries it sooner)."""
        lister = self.aggregator.lister
        ref = lister.refs.get(name)
        if ref is None:  # deleted: no gauge series
            metrics.set_unavailable(name, None)
            return
        cond = await check(self.aggregator, ref)
        if cond["reason"] == "Passed":
            await self.aggregator.refresh_discovery(ref)
        current = copy.deepcopy(lister.objects.get(name) or {})
        if set_condition(current, cond) and self.leads():
            await self._write(name, cond)
            if cond["status"] != "True":
                metrics.record_unavailable(name, cond["reason"])
        metrics.set_unavailable(name, cond["status"] == "True")
        self.queue.add_after(name, self.interval)

    async def run(self, client: LoopbackClient) -> None:
        """Check until cancelled (the queue is shut down then); ``client`` writes."""
        self.client = client
        await self.aggregator.lister.synced.wait()
        for name in list(self.aggregator.lister.refs):
            self.enqueue(name)
        try:
            await run_workers("apiservice-availability", self.queue, self.reconcile, WORKERS)
        finally:
            self.queue.shut_down()
