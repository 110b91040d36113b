"""The validation strategies of kube's built-in kinds (upstream's per-kind
``strategy.go``: ``Validate``, ``ValidateUpdate`` and the preparation they rely on),
handed by the composition root to the kinds' strategies (``proxy.kube.strategy``), as
upstream's ``controlplane`` installs each API group's REST storage with its strategy."""

from __future__ import annotations

from collections.abc import Mapping

from proxy.apimachinery.validation import names
from proxy.kube.validation import admissionregistration, apps, batch, core, event, pod, rbac
from proxy.registry.validation.strategy import KindStrategy

__all__ = ["BUILTIN_STRATEGIES"]

BUILTIN_STRATEGIES: Mapping[tuple[str, str], KindStrategy] = {
    ("", "Pod"): KindStrategy(pod.validate_pod, pod.validate_pod_update),
    ("", "Service"): KindStrategy(
        core.validate_service,
        core.validate_service_update,
        prepare_update=core.prepare_service_update,
    ),
    ("", "ConfigMap"): KindStrategy(core.validate_config_map, core.validate_config_map_update),
    ("", "Secret"): KindStrategy(core.validate_secret, core.validate_secret_update),
    ("", "Namespace"): KindStrategy(core.validate_namespace, core.validate_namespace_update),
    ("", "PersistentVolumeClaim"): KindStrategy(
        core.validate_persistent_volume_claim, core.validate_persistent_volume_claim_update
    ),
    ("", "Node"): KindStrategy(core.validate_node, core.validate_node_update),
    ("", "Event"): KindStrategy(event.validate_event, event.validate_event_update),
    ("apps", "Deployment"): KindStrategy(apps.validate_deployment, apps.validate_deployment_update),
    ("apps", "ReplicaSet"): KindStrategy(
        apps.validate_replica_set, apps.validate_replica_set_update
    ),
    ("apps", "StatefulSet"): KindStrategy(
        apps.validate_stateful_set, apps.validate_stateful_set_update
    ),
    ("apps", "DaemonSet"): KindStrategy(apps.validate_daemon_set, apps.validate_daemon_set_update),
    ("batch", "Job"): KindStrategy(
        batch.validate_job, batch.validate_job_update, prepare_create=batch.prepare_job_for_create
    ),
    ("batch", "CronJob"): KindStrategy(batch.validate_cron_job, batch.validate_cron_job_update),
    # Role and ClusterRole: ObjectMeta alone (their rules are not validated here), with
    # RBAC's name rule, a path segment (ValidateRBACName)
    ("rbac.authorization.k8s.io", "Role"): KindStrategy(name_rule=names.path_segment_name),
    ("rbac.authorization.k8s.io", "ClusterRole"): KindStrategy(name_rule=names.path_segment_name),
    ("rbac.authorization.k8s.io", "RoleBinding"): KindStrategy(
        rbac.validate_role_binding,
        rbac.validate_role_binding_update,
        prepare_create=rbac.prepare_binding,
        prepare_update=rbac.prepare_binding_update,
    ),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): KindStrategy(
        rbac.validate_cluster_role_binding,
        rbac.validate_cluster_role_binding_update,
        prepare_create=rbac.prepare_binding,
        prepare_update=rbac.prepare_binding_update,
    ),
    # admission webhooks and policies (proxy/admission runs them)
    **{
        ("admissionregistration.k8s.io", kind): KindStrategy(create, update)
        for kind, (create, update) in admissionregistration.VALIDATORS.items()
    },
}
