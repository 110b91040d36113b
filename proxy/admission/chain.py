"""The admission chain and its flags, as kube-apiserver builds them
(``pkg/kubeapiserver/options/plugins.go``, ``k8s.io/apiserver/pkg/admission/chain.go``).

Plugins run in upstream's fixed order (``ORDERED_PLUGINS``), whatever the order of the
flags. ``--enable-admission-plugins`` adds to the default-on set, ``--disable-admission-
plugins`` removes from it (a plugin named in both is enabled, as upstream). The chain's
``admit`` runs every mutating plugin that handles the operation, in order; ``validate``
every validating one. The first rejection ends the phase.

Plugins upstream has but this server does not implement (they concern objects or
components the lab does not have: NodeRestriction, StorageObjectInUseProtection, ...)
are accepted by name and run as no-ops; ``NOT_IMPLEMENTED`` lists them and the server
logs them at start-up. Unknown names are start-up errors with upstream's words.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from proxy.admission.attributes import Attributes
from proxy.admission.interfaces import Plugin, PluginDeps
from proxy.admission.plugins import Plugins

__all__ = [
    "DEFAULT_ON",
    "ORDERED_PLUGINS",
    "AdmissionChain",
    "PluginDeps",
    "enabled_plugins",
    "not_implemented",
]

log = logging.getLogger("watchcache.admission")

# kube-apiserver's AllOrderedPlugins
ORDERED_PLUGINS: tuple[str, ...] = (
    "AlwaysAdmit",
    "NamespaceAutoProvision",
    "NamespaceLifecycle",
    "NamespaceExists",
    "LimitPodHardAntiAffinityTopology",
    "LimitRanger",
    "ServiceAccount",
    "NodeRestriction",
    "TaintNodesByCondition",
    "AlwaysPullImages",
    "ImagePolicyWebhook",
    "PodSecurity",
    "PodNodeSelector",
    "Priority",
    "DefaultTolerationSeconds",
    "PodTolerationRestriction",
    "EventRateLimit",
    "ExtendedResourceToleration",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "OwnerReferencesPermissionEnforcement",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "DenyServiceExternalIPs",
    "PodTopologyLabels",
    "MutatingAdmissionPolicy",
    # webhooks, policies, quota and deny go last
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
    "AlwaysDeny",
)

# every plugin not in kube-apiserver's DefaultOffAdmissionPlugins
DEFAULT_ON: frozenset[str] = frozenset({
    "NamespaceLifecycle", "LimitRanger", "ServiceAccount", "TaintNodesByCondition",
    "PodSecurity", "Priority", "DefaultTolerationSeconds", "DefaultStorageClass",
    "StorageObjectInUseProtection", "PersistentVolumeClaimResize", "RuntimeClass",
    "CertificateApproval", "CertificateSigning", "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction", "DefaultIngressClass", "PodTopologyLabels",
    "MutatingAdmissionPolicy", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook", "ResourceQuota",
})  # fmt: skip


def not_implemented(plugins: Plugins) -> frozenset[str]:
    """The plugins upstream has that run here as no-ops (none of ``plugins``)."""
    return frozenset(ORDERED_PLUGINS) - plugins.registered()


def enabled_plugins(enable: Iterable[str], disable: Iterable[str]) -> list[str]:
    """The plugins to run, in upstream's order (names are checked when the flags are
    read, ``proxy.options.settings``)."""
    enable, disable = list(enable), list(disable)
    on = (DEFAULT_ON - set(disable)) | set(enable)
    return [name for name in ORDERED_PLUGINS if name in on]


class AdmissionChain:
    """The enabled plugins, in order (kube's ``chainAdmissionHandler``)."""

    def __init__(self, plugins: Sequence[Plugin]) -> None:
        self.plugins = tuple(plugins)
        self._mutating = tuple(p for p in plugins if p.mutating)
        self._validating = tuple(p for p in plugins if p.validating)

    @classmethod
    def build(cls, names: Sequence[str], deps: PluginDeps, plugins: Plugins) -> AdmissionChain:
        """The chain of ``names`` (in order) built from ``plugins``; a name without a
        plugin there is a no-op, logged."""
        implemented = plugins.registered()
        skipped = [n for n in names if n not in implemented]
        if skipped:
            log.info("admission plugins enabled but not implemented here (no-ops): %s",
                     ", ".join(skipped))
        return cls([plugins.new(n, deps) for n in names if n in implemented])

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.plugins]

    def plugin(self, name: str) -> Plugin | None:
        return next((p for p in self.plugins if p.name == name), None)

    async def admit(self, attrs: Attributes) -> None:
        """The mutating phase: every mutating plugin that handles the operation."""
        for plugin in self._mutating:
            if plugin.handles(attrs.operation):
                await plugin.admit(attrs)

    async def validate(self, attrs: Attributes) -> None:
        """The validating phase (after schema validation)."""
        for plugin in self._validating:
            if plugin.handles(attrs.operation):
                await plugin.validate(attrs)
