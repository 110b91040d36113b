"""The plugin interfaces of the admission chain (kube's ``admission.Interface``,
``MutationInterface``, ``ValidationInterface``), and ``ObjectLookup``: how a plugin
reads (and, for ResourceQuota, writes) the objects it needs.

A plugin raises ``proxy.apierrors.StatusError`` to reject; anything else it raises is
a bug and becomes a 500 through the handler-errors filter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import aiohttp

from proxy.admission.attributes import CONNECT, CREATE, DELETE, UPDATE, Attributes
from proxy.admission.configuration import ConfigurationSource
from proxy.authorization.authorizer import Authorizer

__all__ = ["ALL_OPERATIONS", "JSON", "ClusterTransport", "ObjectLookup", "Plugin", "PluginDeps"]

JSON = dict[str, Any]
# a connector whose connections reach the cluster's network: the egress selector's
# ``cluster`` (upstream's ``egressselector.Cluster`` dialer of the webhook client)
ClusterTransport = Callable[[], aiohttp.BaseConnector]

ALL_OPERATIONS = frozenset({CREATE, UPDATE, DELETE, CONNECT})


class ObjectLookup(Protocol):
    """Reads for plugins. ``get``/``list`` read from the watch cache (resourceVersion
    0, as kube's informers) unless ``fresh`` (a quorum read from etcd)."""

    async def get(
        self, group: str, plural: str, namespace: str, name: str, *, fresh: bool = False
    ) -> JSON | None: ...

    async def list(
        self, group: str, plural: str, namespace: str, *, fresh: bool = False
    ) -> list[JSON]: ...

    def resource_for_kind(self, group: str, kind: str) -> tuple[str, bool] | None:
        """(plural, namespaced) of a served kind, None when not served."""
        ...

    async def write_status(self, group: str, plural: str, obj: JSON) -> bool:
        """Write ``obj``'s status if its resourceVersion is still current (False:
        conflict, read again)."""
        ...


@dataclass
class PluginDeps:
    """What plugins are built with (kube's plugin initializers)."""

    lookup: ObjectLookup
    # the webhook and policy configurations, kept current by watching them (what the
    # webhook and policy plugins need; None where no plugin does, as in unit tests)
    sources: ConfigurationSource | None = None
    # (group, version, kind, object) -> the object defaulted in place: what a mutating
    # webhook returns is decoded, hence defaulted, as upstream's ObjectInterfaces do
    default: Callable[[str, str, str, dict[str, Any]], dict[str, Any]] | None = None
    # the server's authorizer, for plugins that ask it (CertificateApproval); None where
    # nothing is authorized (the plain port)
    authorizer: Authorizer | None = None
    # how webhooks reach a pod's address (None: dialled directly)
    cluster: ClusterTransport | None = None


class Plugin:
    """An admission plugin. ``mutating`` plugins implement ``admit`` (run in the
    mutating phase, may change ``attrs.object``); ``validating`` ones ``validate``.
    ``operations`` is what ``Handles`` answers yes to."""

    name: ClassVar[str] = ""
    operations: ClassVar[frozenset[str]] = ALL_OPERATIONS
    mutating: ClassVar[bool] = False
    validating: ClassVar[bool] = False

    def __init__(self, deps: PluginDeps) -> None:
        self.lookup = deps.lookup

    def handles(self, operation: str) -> bool:
        return operation in self.operations

    async def admit(self, attrs: Attributes) -> None:
        """Mutating phase."""

    async def validate(self, attrs: Attributes) -> None:
        """Validating phase."""
