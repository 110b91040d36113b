"""The apps group's defaults (``pkg/apis/apps/v1/defaults.go``), and their pod
templates' (``SetDefaults_PodSpec`` and the spec's members, never ``SetDefaults_Pod``).
Feature gates as kube-apiserver 1.37 enables them by default
(``MaxUnavailableStatefulSet``: beta, on, since 1.35; ``StatefulSetAutoDeletePVC``: GA).
"""

from __future__ import annotations

from collections.abc import Callable

from proxy.kube.defaulting.core import persistent_volume_claim
from proxy.kube.defaulting.fields import JSON, child, default_nil, default_zero, dicts
from proxy.kube.defaulting.pod_spec import default_pod_template

__all__ = ["DEFAULTERS"]


def _rolling_update(strategy: JSON, rolling: str, **defaults: object) -> None:
    """``strategy.rollingUpdate`` created when nil, its nil members defaulted."""
    update = child(strategy, rolling)
    if update is not None:
        for key, value in defaults.items():
            default_nil(update, key, value)


def deployment(obj: JSON) -> None:
    """``SetDefaults_Deployment``: one replica, RollingUpdate with 25%/25%, a history
    of 10, a progress deadline of 600 s."""
    spec = child(obj, "spec")
    if spec is None:
        return
    default_nil(spec, "replicas", 1)
    strategy = child(spec, "strategy")
    if strategy is not None:
        default_zero(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            _rolling_update(strategy, "rollingUpdate", maxUnavailable="25%", maxSurge="25%")
    default_nil(spec, "revisionHistoryLimit", 10)
    default_nil(spec, "progressDeadlineSeconds", 600)
    default_pod_template(spec)


def daemon_set(obj: JSON) -> None:
    """``SetDefaults_DaemonSet``: RollingUpdate with maxUnavailable 1, maxSurge 0; a
    history of 10."""
    spec = child(obj, "spec")
    if spec is None:
        return
    strategy = child(spec, "updateStrategy")
    if strategy is not None:
        default_zero(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            _rolling_update(strategy, "rollingUpdate", maxUnavailable=1, maxSurge=0)
    default_nil(spec, "revisionHistoryLimit", 10)
    default_pod_template(spec)


def stateful_set(obj: JSON) -> None:
    """``SetDefaults_StatefulSet``: OrderedReady, RollingUpdate (partition 0,
    maxUnavailable 1 where a rollingUpdate is present), PVCs retained, one replica, a
    history of 10; its volumeClaimTemplates get a PVC's defaults (phase Pending too)."""
    spec = child(obj, "spec")
    if spec is None:
        return
    default_zero(spec, "podManagementPolicy", "OrderedReady")
    strategy = child(spec, "updateStrategy")
    if strategy is not None:
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
            default_nil(strategy, "rollingUpdate", {})
        update = strategy.get("rollingUpdate")
        if strategy["type"] == "RollingUpdate" and isinstance(update, dict):
            default_nil(update, "partition", 0)
            default_nil(update, "maxUnavailable", 1)
    retention = child(spec, "persistentVolumeClaimRetentionPolicy")
    if retention is not None:
        default_zero(retention, "whenDeleted", "Retain")
        default_zero(retention, "whenScaled", "Retain")
    default_nil(spec, "replicas", 1)
    default_nil(spec, "revisionHistoryLimit", 10)
    default_pod_template(spec)
    for claim in dicts(spec, "volumeClaimTemplates"):
        persistent_volume_claim(claim)


def replica_set(obj: JSON) -> None:
    """``SetDefaults_ReplicaSet``: one replica."""
    spec = child(obj, "spec")
    if spec is not None:
        default_nil(spec, "replicas", 1)
        default_pod_template(spec)


DEFAULTERS: dict[str, Callable[[JSON], None]] = {
    "Deployment": deployment,
    "DaemonSet": daemon_set,
    "StatefulSet": stateful_set,
    "ReplicaSet": replica_set,
}
