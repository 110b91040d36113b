"""``kube-system/extension-apiserver-authentication``, as kube-apiserver's
cluster-authentication-trust controller publishes it
(``pkg/controlplane/controller/clusterauthenticationtrust``): the client CA
(``client-ca-file``) and the front proxy's request-header settings, which every
component serving its own HTTPS (scheduler, controller-manager, extension API servers)
reads to authenticate the requests kube-apiserver forwards. Lists are JSON arrays, as
upstream serializes them; CA bundles keep the certificates already published (another
replica's) and add ours.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from proxy.kube.bootstrap.writer import BootstrapWriter
from proxy.options.settings import Settings
from proxy.server.post_start_hooks import PostStartHookContext
from storage.interfaces import JSONObject

__all__ = ["ClusterAuthentication", "authentication_data"]

log = logging.getLogger("watchcache.proxy")

NAME, NAMESPACE = "extension-apiserver-authentication", "kube-system"
RETRY_SECONDS, INTERVAL = 1.0, 60.0
_PEM = re.compile(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.S)


def _json_list(values: tuple[str, ...]) -> str:
    """Go's json.Marshal of a []string (``null`` when unset)."""
    return json.dumps(list(values) if values else None, separators=(",", ":"))


def authentication_data(settings: Settings) -> dict[str, str]:
    """The keys this server publishes: ``client-ca-file`` with ``--client-ca-file``,
    the ``requestheader-*`` keys with ``--requestheader-client-ca-file``."""
    data: dict[str, str] = {}
    if settings.client_ca_file:
        data["client-ca-file"] = Path(settings.client_ca_file).read_text()
    if settings.requestheader_client_ca_file:
        data.update({
            "requestheader-client-ca-file": Path(settings.requestheader_client_ca_file).read_text(),
            "requestheader-allowed-names": _json_list(settings.requestheader_allowed_names),
            "requestheader-username-headers": _json_list(settings.requestheader_username_headers),
            "requestheader-group-headers": _json_list(settings.requestheader_group_headers),
            "requestheader-extra-headers-prefix": _json_list(
                settings.requestheader_extra_headers_prefix),
        })  # fmt: skip
        if settings.requestheader_uid_headers:
            data["requestheader-uid-headers"] = _json_list(settings.requestheader_uid_headers)
    return data


def _combined_bundle(published: str, ours: str) -> str:
    """The published bundle's certificates, then those of ours it lacks."""
    certs = _PEM.findall(published)
    certs += [c for c in _PEM.findall(ours) if c not in certs]
    return "\n".join(certs) + "\n" if certs else ours


def _config_map(data: dict[str, str]) -> Callable[[JSONObject], JSONObject]:
    def desired(current: JSONObject) -> JSONObject:
        merged = dict(current.get("data") or {})
        for key, value in data.items():
            is_bundle = key.endswith("ca-file") and key in merged
            merged[key] = _combined_bundle(str(merged[key]), value) if is_bundle else value
        meta = current.get("metadata") or {"name": NAME, "namespace": NAMESPACE}
        return {**current, "apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                "data": merged}  # fmt: skip

    return desired


@dataclass
class ClusterAuthentication:
    """Publishes the ConfigMap; ``ready`` is set (by ``run`` only) once written."""

    data: dict[str, str]
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    async def publish_once(self, writer: BootstrapWriter) -> bool:
        try:
            await writer.ensure("", "v1", "configmaps", NAMESPACE, _config_map(self.data))
        except Exception as e:  # etcd down, a race: the next round retries
            log.info("publishing %s/%s: %s (will retry)", NAMESPACE, NAME, e)
            return False
        return True

    async def run(self, hook: PostStartHookContext) -> None:
        """The ``start-cluster-authentication-info-controller`` hook: publish, then again
        every minute (a deleted ConfigMap comes back)."""
        writer = BootstrapWriter(hook.loopback)
        while True:
            if await self.publish_once(writer):
                self.ready.set()
            await self.sleep(INTERVAL if self.ready.is_set() else RETRY_SECONDS)
