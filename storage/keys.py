"""The etcd key layout of Kubernetes objects (upstream ``registry/generic/registry/store.go``
``NamespaceKeyFunc`` and ``pkg/kubeapiserver/default_storage_factory_builder.go``).

``<prefix>/<resource path>/<namespace>/<name>``, cluster-scoped objects
``<prefix>/<resource path>/<name>``; the prefix defaults to ``/registry``. Resources of
the groups kube-apiserver serves itself sit directly under the prefix (``deployments``,
not ``apps/deployments``); a few keep historic names (``minions`` for nodes); every
other group (CRDs, aggregated generic storage) is stored under ``<group>/<plural>``.

Pure functions, no I/O. List and watch keys are prefixes ending in ``/``, so that
``/registry/pods/`` never matches ``/registry/podsecuritypolicies/...``.
"""

from __future__ import annotations

DEFAULT_PREFIX = "/registry"

# Groups whose storage lives in kube-apiserver itself; their resources are keyed
# without the group (kube-apiserver's storage factory uses the bare resource name).
BUILTIN_GROUPS = frozenset(
    {
        "",
        "admissionregistration.k8s.io",
        "apps",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "extensions",
        "flowcontrol.apiserver.k8s.io",
        "internal.apiserver.k8s.io",
        "networking.k8s.io",
        "node.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "resource.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
        "storagemigration.k8s.io",
    }
)

# Historic key names kept for compatibility with data written by old apiservers.
HISTORIC_PATHS: dict[str, str] = {
    "services": "services/specs",
    "endpoints": "services/endpoints",
    "nodes": "minions",
    "replicationcontrollers": "controllers",
    "ingresses": "ingress",
}


def storage_path(group: str, resource: str) -> str:
    """The resource's path below the prefix: ``pods``, ``minions``, ``example.com/widgets``."""
    if group in BUILTIN_GROUPS:
        return HISTORIC_PATHS.get(resource, resource)
    return f"{group}/{resource}"


def normalize_prefix(prefix: str = DEFAULT_PREFIX) -> str:
    """``registry``, ``/registry/`` and ``/registry`` all mean ``/registry``."""
    cleaned = "/" + prefix.strip("/")
    return cleaned.rstrip("/") if cleaned != "/" else ""


def resource_prefix(group: str, resource: str, prefix: str = DEFAULT_PREFIX) -> str:
    """The list/watch key of a whole resource: ``/registry/pods/``."""
    return f"{normalize_prefix(prefix)}/{storage_path(group, resource)}/"


def namespace_prefix(
    group: str, resource: str, namespace: str, prefix: str = DEFAULT_PREFIX
) -> str:
    """The list/watch key of one namespace of a namespaced resource: ``/registry/pods/ns/``."""
    return f"{resource_prefix(group, resource, prefix)}{namespace}/"


def object_key(
    group: str, resource: str, name: str, namespace: str = "", prefix: str = DEFAULT_PREFIX
) -> str:
    """The key of one object; ``namespace`` empty means cluster-scoped."""
    base = resource_prefix(group, resource, prefix)
    return f"{base}{namespace}/{name}" if namespace else f"{base}{name}"


def split_object_key(key: str, list_prefix: str) -> tuple[str, str]:
    """(namespace, name) of ``key`` under the resource prefix ``list_prefix``; namespace
    is empty for a cluster-scoped key. ValueError if ``key`` is not under the prefix."""
    if not key.startswith(list_prefix):
        raise ValueError(f"key {key!r} is not under {list_prefix!r}")
    rest = key[len(list_prefix) :]
    namespace, sep, name = rest.rpartition("/")
    return (namespace, name) if sep else ("", rest)
