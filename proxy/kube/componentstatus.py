"""``componentstatuses`` (kube-apiserver's ``registry/core/componentstatus``, deprecated
but served): the health of the control plane, probed on each GET — ``etcd-0`` (a quorum
read of etcd's revision), ``scheduler`` and ``controller-manager`` (their ``/healthz``
on 127.0.0.1:10259 and :10257, TLS unverified, as upstream probes them). No storage,
no watch: ``get`` and ``list`` only (``proxy.endpoints.handlers.computed`` serves
them; the composition root hands it :class:`ComponentStatuses`).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp

__all__ = ["ComponentStatuses"]

JSON = dict[str, Any]
PROBE_TIMEOUT = 1.0  # seconds per component (upstream's probe timeout is 20 s)
# name -> its /healthz (GetServersToValidate's defaults)
_COMPONENTS = {
    "controller-manager": "https://127.0.0.1:10257/healthz",
    "scheduler": "https://127.0.0.1:10259/healthz",
}


def _condition(healthy: bool | None, message: str = "", error: str = "") -> JSON:
    """A ``Healthy`` condition as ``ToConditionStatus`` makes it (Unknown when the probe
    itself failed)."""
    status = {True: "True", False: "False", None: "Unknown"}[healthy]
    condition: JSON = {"type": "Healthy", "status": status}
    if message:
        condition["message"] = message
    if error:
        condition["error"] = error
    return condition


async def _probe_http(url: str) -> JSON:
    insecure = ssl.create_default_context()
    insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
    timeout = aiohttp.ClientTimeout(total=PROBE_TIMEOUT)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.get(url, ssl=insecure) as resp,
        ):
            body = (await resp.read()).decode(errors="replace")
    except (aiohttp.ClientError, TimeoutError, OSError) as e:
        return _condition(None, error=f'Get "{url}": {e}')
    if 200 <= resp.status < 400:
        return _condition(True, message=body)
    error = f"HTTP probe failed with statuscode: {resp.status}"
    return _condition(False, message=body, error=error)


@dataclass
class ComponentStatuses:
    """The objects ``GET componentstatuses`` answers with, probed on each call (upstream's
    componentstatus REST storage); ``etcd_health`` reads etcd (raises when it cannot)."""

    etcd_health: Callable[[], Awaitable[object]]

    async def _probe_etcd(self) -> JSON:
        try:
            async with asyncio.timeout(PROBE_TIMEOUT):
                await self.etcd_health()
        except Exception as e:  # unreachable, timed out: Unhealthy with the cause
            return _condition(False, error=str(e) or type(e).__name__)
        return _condition(True, message="ok")

    async def list(self) -> list[JSON]:
        names = [*_COMPONENTS, "etcd-0"]
        probes = [_probe_http(url) for url in _COMPONENTS.values()] + [self._probe_etcd()]
        conditions = await asyncio.gather(*probes)
        return [
            {"kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": name},
             "conditions": [condition]}
            for name, condition in zip(names, conditions, strict=True)
        ]  # fmt: skip
