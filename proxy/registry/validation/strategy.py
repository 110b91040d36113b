"""Which validation each kind gets, and the two entry points the write path calls, in
the order of kube-apiserver's ``rest.BeforeCreate`` / ``rest.BeforeUpdate``:

- :func:`validate_create`: the kind's create preparation (a Job's generated selector),
  the kind's ``strategy.Validate`` (or, for kinds without one here, ObjectMeta with
  the kind's name rule), then ObjectMeta with ``ValidatePathSegmentName``;
- :func:`validate_update`: the common fields (ObjectMeta, path-segment name, and the
  metadata update rules), then the kind's ``strategy.ValidateUpdate`` (``/status``
  writes: the metadata update rules, and the kind's status rules where it has them),
  after the kind's update preparation (a Service keeps its allocated clusterIP).

Every violation of one write is reported together in one 422 Invalid
(``errors.NewInvalid``): causes keep duplicates, the message lists each error once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from proxy.registry.resources import ResourceInfo
from proxy.registry.validation import (
    admissionregistration,
    apiregistration,
    apps,
    batch,
    core,
    event,
    field,
    names,
    pod,
)
from proxy.registry.validation.field import ErrorList
from proxy.registry.validation.object_meta import (
    validate_object_meta,
    validate_object_meta_update,
)

__all__ = [
    "KindStrategy",
    "has_validation",
    "register_strategy",
    "unregister_strategy",
    "validate_create",
    "validate_update",
]

JSON = dict[str, Any]


@dataclass(frozen=True)
class KindStrategy:
    """A kind's validation: ``validate`` on create, ``validate_update`` on update, and
    the mutations its REST strategy makes first (``prepare_create``/``prepare_update``)."""

    validate: Callable[[JSON], ErrorList]
    validate_update: Callable[[JSON, JSON], ErrorList]
    prepare_create: Callable[[JSON], None] | None = None
    prepare_update: Callable[[JSON, JSON], None] | None = None
    # the ``/status`` writes' own rules (``ValidateXStatusUpdate``), where a kind has them
    validate_status_update: Callable[[JSON, JSON], ErrorList] | None = None


_STRATEGIES: dict[tuple[str, str], KindStrategy] = {
    ("", "Pod"): KindStrategy(pod.validate_pod, pod.validate_pod_update),
    ("", "Service"): KindStrategy(
        core.validate_service,
        core.validate_service_update,
        prepare_update=core.prepare_service_update,
    ),
    ("", "ConfigMap"): KindStrategy(core.validate_config_map, core.validate_config_map_update),
    ("", "Secret"): KindStrategy(core.validate_secret, core.validate_secret_update),
    ("", "Namespace"): KindStrategy(core.validate_namespace, core.validate_namespace_update),
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
    # admission webhooks and policies (proxy/admission)
    **{
        ("admissionregistration.k8s.io", kind): KindStrategy(create, update)
        for kind, (create, update) in admissionregistration.VALIDATORS.items()
    },
    # API aggregation (proxy/aggregator)
    ("apiregistration.k8s.io", "APIService"): KindStrategy(
        apiregistration.validate,
        apiregistration.validate_update,
        prepare_create=apiregistration.prepare_create,
        prepare_update=apiregistration.prepare_update,
        validate_status_update=apiregistration.validate_status_update,
    ),
}


def register_strategy(group: str, kind: str, strategy: KindStrategy) -> None:
    """Add (or replace) a kind's strategy at run time (CRDs and custom resources,
    ``proxy.apiextensions``)."""
    _STRATEGIES[(group, kind)] = strategy


def unregister_strategy(group: str, kind: str) -> None:
    _STRATEGIES.pop((group, kind), None)


# Names of the kinds without a strategy here: RBAC names are path segments; the rest
# DNS subdomains (the rule of most upstream strategies).
_PATH_SEGMENT_NAMED = frozenset({"roles", "rolebindings", "clusterroles", "clusterrolebindings"})


def _strategy(resource: ResourceInfo) -> KindStrategy | None:
    return _STRATEGIES.get((resource.group, resource.kind))


def has_validation(resource: ResourceInfo) -> bool:
    """Whether the kind has kube's own validation here (then the schema's required
    fields are not checked: kube's validation words those errors itself)."""
    return _strategy(resource) is not None


def _name_rule(resource: ResourceInfo) -> names.NameFunc:
    if resource.plural in _PATH_SEGMENT_NAMED:
        return names.path_segment_name
    return names.name_is_dns_subdomain


def _metadata(obj: JSON) -> JSON:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _name(obj: JSON) -> str:
    return str(_metadata(obj).get("name") or "")


def _raise_if(errs: ErrorList, resource: ResourceInfo, obj: JSON) -> None:
    if errs:
        raise field.to_status(resource.group_kind, _name(obj), errs)


# API groups served outside k8s.io/kubernetes, whose object meta validation is
# apimachinery's (no kube finalizer-name rule)
GENERIC_META_GROUPS = frozenset({"apiextensions.k8s.io", "apiregistration.k8s.io"})


def validate_create(obj: JSON, resource: ResourceInfo) -> None:
    """Validate a new object (system fields already set); may mutate it as the kind's
    strategy does. Raises a 422 ``StatusError`` naming every violation."""
    strategy = _strategy(resource)
    if strategy is not None:
        if strategy.prepare_create is not None:
            strategy.prepare_create(obj)
        errs = strategy.validate(obj)
    else:
        errs = validate_object_meta(_metadata(obj), resource.namespaced, _name_rule(resource))
    _raise_if(errs, resource, obj)
    path_errs = validate_object_meta(
        _metadata(obj), resource.namespaced, names.path_segment_name, core=False
    )
    _raise_if(path_errs, resource, obj)


def validate_update(new: JSON, old: JSON, resource: ResourceInfo, subresource: str = "") -> None:
    """Validate ``new`` replacing the stored ``old`` (after the update's system-field
    merge); may mutate ``new`` as the kind's strategy does. Raises a 422 StatusError."""
    strategy = _strategy(resource)
    if strategy is not None and strategy.prepare_update is not None and not subresource:
        strategy.prepare_update(new, old)
    new_meta, old_meta = _metadata(new), _metadata(old)
    errs = validate_object_meta(new_meta, resource.namespaced, names.path_segment_name, core=False)
    errs += validate_object_meta_update(new_meta, old_meta, core=False)
    if strategy is None or subresource:
        # kube's kinds add core's finalizer rule; apiextensions and the aggregator
        # validate with apimachinery's (a CRD's customresourcecleanup finalizer has no /)
        core = resource.group not in GENERIC_META_GROUPS
        errs += validate_object_meta_update(new_meta, old_meta, core=core)
        if subresource == "status" and strategy is not None and strategy.validate_status_update:
            errs += strategy.validate_status_update(new, old)
    else:
        errs += strategy.validate_update(new, old)
    _raise_if(errs, resource, new)
