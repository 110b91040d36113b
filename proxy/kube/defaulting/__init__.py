"""Defaulting of kube's built-in kinds, as kube-apiserver 1.37 defaults them on every
decode: the ``SetDefaults_*`` functions of ``pkg/apis/<group>/<version>/defaults.go``
and the ``+default`` markers of ``k8s.io/api``, in the order their generated
``SetObjectDefaults_*`` apply them. One module per API group; pure functions over
decoded JSON, no I/O.

The one entry point is :func:`default_object` (by group, version and kind); the
composition root hands it to the generic handlers, which call it on every decoded
body and patch result before admission (docs/defaulting.md says where, and why values
read from etcd are defaulted at write).
"""

from __future__ import annotations

from collections.abc import Callable

from proxy.kube.defaulting import (
    admissionregistration,
    apps,
    autoscaling,
    batch,
    certificates,
    core,
    discovery,
    flowcontrol,
    networking,
    rbac,
    resource,
    scheduling,
    storage,
)
from proxy.kube.defaulting.fields import JSON

__all__ = ["DEFAULTERS", "Defaulter", "default_object", "defaulter_for"]

Defaulter = Callable[[JSON], None]

_BY_GROUP_VERSION: dict[tuple[str, str], dict[str, Defaulter]] = {
    ("", "v1"): core.DEFAULTERS,
    ("apps", "v1"): apps.DEFAULTERS,
    ("batch", "v1"): batch.DEFAULTERS,
    ("autoscaling", "v1"): autoscaling.DEFAULTERS_V1,
    ("autoscaling", "v2"): autoscaling.DEFAULTERS_V2,
    ("networking.k8s.io", "v1"): networking.DEFAULTERS,
    ("rbac.authorization.k8s.io", "v1"): rbac.DEFAULTERS,
    ("scheduling.k8s.io", "v1"): scheduling.DEFAULTERS,
    ("storage.k8s.io", "v1"): storage.DEFAULTERS,
    ("discovery.k8s.io", "v1"): discovery.DEFAULTERS,
    ("admissionregistration.k8s.io", "v1"): admissionregistration.DEFAULTERS,
    ("flowcontrol.apiserver.k8s.io", "v1"): flowcontrol.DEFAULTERS,
    ("certificates.k8s.io", "v1"): certificates.DEFAULTERS,
    ("resource.k8s.io", "v1"): resource.DEFAULTERS,
}

# (group, version, kind) -> its defaulter: every built-in kind with defaults
DEFAULTERS: dict[tuple[str, str, str], Defaulter] = {
    (group, version, kind): defaulter
    for (group, version), kinds in _BY_GROUP_VERSION.items()
    for kind, defaulter in kinds.items()
}


def defaulter_for(group: str, version: str, kind: str) -> Defaulter | None:
    """The defaulter of a built-in kind; None for kinds without defaults (ConfigMap,
    Lease, ...) and for kinds this package does not know (custom resources, whose
    defaults come from their CRD's schema)."""
    return DEFAULTERS.get((group, version, kind))


def default_object(group: str, version: str, kind: str, obj: JSON) -> JSON:
    """Apply the kind's defaults to ``obj`` in place (and return it). A member of an
    unexpected type is left alone: validation reports it."""
    defaulter = DEFAULTERS.get((group, version, kind))
    if defaulter is not None:
        defaulter(obj)
    return obj
