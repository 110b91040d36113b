"""The write strategy of the built-in kinds (upstream's ``pkg/registry/<group>/<kind>/
strategy.go``), one object per (resource, subresource) route.

Every built-in kind starts from the generic strategy (``proxy.registry.strategy``:
ObjectMeta's system fields, and the kind's validation rules). The RBAC kinds add
escalation prevention (upstream's ``pkg/registry/rbac/*/policybased`` storages): a
Role, ClusterRole or binding that grants more than its writer holds is 403. A
namespace's deletion has its own rules.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from proxy import apierrors
from proxy.apimachinery.validation import field as field_errors
from proxy.kube.certificates import (
    CSRApprovalStrategy,
    CSRStatusStrategy,
    CSRStrategy,
    PDBStrategy,
)
from proxy.kube.prepare import namespace_defaults, pod_qos_class, secret_defaults
from proxy.kube.validation.pod import validate_ephemeral_containers_update
from proxy.registry import before_delete, object_meta
from proxy.registry.deletion import DeletionRules
from proxy.registry.resources import ResourceInfo
from proxy.registry.rest import Context, ResetFields
from proxy.registry.strategy import GenericStrategy, StatusStrategy
from proxy.registry.validation.strategy import KindStrategy
from proxy.request.user import UserInfo
from storage.interfaces import JSONObject

if TYPE_CHECKING:
    from proxy.request.delete_options import DeleteOptions

__all__ = [
    "CSRApprovalStrategy",
    "EphemeralContainersStrategy",
    "EscalationCheck",
    "KubeStrategyDeps",
    "NamespaceFinalizeStrategy",
    "NamespaceStrategy",
    "PodStrategy",
    "RBACStrategy",
    "SecretStrategy",
    "pod_grace_period",
    "strategy_for",
]

# (user, resource plural, namespace, name, object) -> None or a 403 Status error
EscalationCheck = Callable[[UserInfo, str, str, str, JSONObject], None]


@dataclass(frozen=True)
class RBACStrategy(GenericStrategy):
    """A Role, ClusterRole, RoleBinding or ClusterRoleBinding: escalation prevention on
    every write of an authorized request."""

    escalation: EscalationCheck | None = None

    def check_write(self, ctx: Context, obj: JSONObject) -> None:
        if self.escalation is None or not ctx.authorized or ctx.user is None:
            return
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or ctx.namespace)
        name = str(meta.get("name") or "")
        self.escalation(ctx.user, self.resource.plural, namespace, name, obj)


@dataclass(frozen=True)
class NamespaceStrategy(GenericStrategy):
    """A Namespace: its deletion checks the options' preconditions first (404 for an
    absent one); the DELETE then only marks it Terminating (``DeletionRules``) and the
    namespace controller empties it (``proxy.kube.namespace``)."""

    def reset_fields(self) -> ResetFields:
        # spec.finalizers are the namespace strategy's (only /finalize changes them)
        return (*super().reset_fields(), ("spec", "finalizers"))

    def prepare_for_create(self, ctx: Context, obj: JSONObject) -> JSONObject:
        obj = super().prepare_for_create(ctx, obj)
        namespace_defaults(obj, str(obj["metadata"].get("name") or ""))
        return obj

    async def before_delete(
        self, ctx: Context, name: str, current: JSONObject | None, options: DeleteOptions
    ) -> None:
        if current is None:
            raise apierrors.not_found(self.resource.qualified, name)
        before_delete.check_preconditions(self.resource, options.preconditions, current)


@dataclass(frozen=True)
class SecretStrategy(GenericStrategy):
    """A Secret: ``stringData`` merged into ``data`` and type ``Opaque`` by default, on
    every write (before the update's generation is decided)."""

    def prepare_for_create(self, ctx: Context, obj: JSONObject) -> JSONObject:
        obj = super().prepare_for_create(ctx, obj)
        secret_defaults(obj)
        return obj

    def prepare_for_update(self, ctx: Context, new: JSONObject, old: JSONObject) -> JSONObject:
        secret_defaults(new)
        return super().prepare_for_update(ctx, new, old)


DEFAULT_GRACE_SECONDS = 30


def pod_grace_period(pod: JSONObject, opts: DeleteOptions) -> int:
    """The pod strategy's ``CheckGracefulDelete``: a pod on a node that has not finished
    gets the request's grace period, else its ``terminationGracePeriodSeconds``, else
    30 s (its kubelet then deletes it with 0); any other pod none."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
        return 0
    if opts.grace_period_seconds is not None:
        return max(opts.grace_period_seconds, 0)
    value = spec.get("terminationGracePeriodSeconds")
    return int(value) if isinstance(value, int) else DEFAULT_GRACE_SECONDS


# what the built-in kinds add to a DELETE: a pod's graceful deletion; a namespace
# Terminating while its spec.finalizers (kubernetes) stand, which the namespace
# controller lifts through /finalize once it has emptied it
_DELETION: Mapping[tuple[str, str], DeletionRules] = {
    ("", "pods"): DeletionRules(grace_period=pod_grace_period),
    ("", "namespaces"): DeletionRules(terminates=True),
}


@dataclass(frozen=True)
class PodStrategy(GenericStrategy):
    """A Pod: created Pending with its QoS class, unless it comes with a status."""

    def prepare_for_create(self, ctx: Context, obj: JSONObject) -> JSONObject:
        obj = super().prepare_for_create(ctx, obj)
        if not obj.get("status"):
            obj["status"] = {"phase": "Pending", "qosClass": pod_qos_class(obj)}
        return obj


def _take_ephemeral_containers(merged: JSONObject, new: JSONObject) -> None:
    containers = (new.get("spec") or {}).get("ephemeralContainers")
    spec = merged.setdefault("spec", {})
    if containers:
        spec["ephemeralContainers"] = containers
    else:
        spec.pop("ephemeralContainers", None)


@dataclass(frozen=True)
class EphemeralContainersStrategy(GenericStrategy):
    """``pods/NAME/ephemeralcontainers`` (upstream's ``EphemeralContainersREST`` and
    ``podEphemeralContainersStrategy``): only ``spec.ephemeralContainers`` changes, and
    only by additions (``ValidatePodEphemeralContainersUpdate``)."""

    def prepare_for_update(self, ctx: Context, new: JSONObject, old: JSONObject) -> JSONObject:
        merged = object_meta.with_parts_of(new, old, _take_ephemeral_containers)
        return object_meta.prepare_for_update(merged, old)

    def validate_update(self, ctx: Context, new: JSONObject, old: JSONObject) -> None:
        super().validate_update(ctx, new, old)
        errors = validate_ephemeral_containers_update(new, old)
        if errors:
            name = str((new.get("metadata") or {}).get("name", ""))
            raise field_errors.to_status("Pod", name, errors)


def _take_finalizers(merged: JSONObject, new: JSONObject) -> None:
    finalizers = list((new.get("spec") or {}).get("finalizers") or [])
    spec = merged.setdefault("spec", {})
    if finalizers:
        spec["finalizers"] = finalizers
    else:
        spec.pop("finalizers", None)


_USER_METADATA = ("labels", "annotations", "finalizers", "ownerReferences")
# kinds whose upstream status strategy resets only the spec (namespaceStatusStrategy,
# deploymentStatusStrategy, podStatusStrategy, ...: most built-in kinds): a /status write
# also changes the object's own metadata, but what the strategy keeps as stored
# (deployments their labels, pods their owner references); every other /status write
# changes the status alone (ResetObjectMetaForStatus: ServiceCIDR,
# ValidatingAdmissionPolicy; FlowSchema; the CRD, APIService and custom resources).
# kube-controller-manager's deployment controller writes the revision annotation it
# keeps with a /status update: reset, no Deployment ever showed its revision.
_STATUS_WITH_METADATA: dict[tuple[str, str], tuple[str, ...]] = {
    **dict.fromkeys([
        ("", "namespaces"), ("", "services"), ("", "nodes"), ("", "resourcequotas"),
        ("", "replicationcontrollers"), ("", "persistentvolumeclaims"),
        ("", "persistentvolumes"), ("batch", "jobs"), ("batch", "cronjobs"),
        ("apps", "replicasets"), ("apps", "statefulsets"), ("apps", "daemonsets"),
        ("autoscaling", "horizontalpodautoscalers"), ("policy", "poddisruptionbudgets"),
        ("networking.k8s.io", "ingresses"),
    ], _USER_METADATA),
    ("apps", "deployments"): ("annotations", "finalizers", "ownerReferences"),
    ("", "pods"): ("labels", "annotations", "finalizers"),
}  # fmt: skip


def _take_status_and_metadata(keys: tuple[str, ...]) -> Callable[[JSONObject, JSONObject], None]:
    def take(merged: JSONObject, new: JSONObject) -> None:
        object_meta.take_status(merged, new)
        new_meta, meta = new.get("metadata") or {}, merged.setdefault("metadata", {})
        for key in keys:
            if key in new_meta:
                meta[key] = copy.deepcopy(new_meta[key])
            else:
                meta.pop(key, None)

    return take


@dataclass(frozen=True)
class MetadataStatusStrategy(StatusStrategy):
    """A ``/status`` write of a kind whose upstream status strategy keeps only the
    stored spec: the status and the object's own metadata change (the conformance
    spec 'should apply changes to a namespace status' patches an annotation there)."""

    def reset_fields(self) -> ResetFields:
        """``spec``, and the metadata the kind keeps as stored (upstream's status
        strategy's GetResetFields: ``metadata.labels`` of a Deployment, ...)."""
        keys = _STATUS_WITH_METADATA.get((self.resource.group, self.resource.plural), ())
        kept = [("metadata", k) for k in _USER_METADATA if k not in keys]
        return (*super().reset_fields(), *kept)

    def prepare_for_update(self, ctx: Context, new: JSONObject, old: JSONObject) -> JSONObject:
        keys = _STATUS_WITH_METADATA.get((self.resource.group, self.resource.plural), ())
        merged = object_meta.with_parts_of(new, old, _take_status_and_metadata(keys))
        return object_meta.prepare_for_update(merged, old, tracked=self.tracks_generation)


@dataclass(frozen=True)
class NamespaceFinalizeStrategy(GenericStrategy):
    """``namespaces/NAME/finalize`` (upstream's ``FinalizeREST``): only
    ``spec.finalizers`` changes."""

    def prepare_for_update(self, ctx: Context, new: JSONObject, old: JSONObject) -> JSONObject:
        merged = object_meta.with_parts_of(new, old, _take_finalizers)
        return object_meta.prepare_for_update(merged, old, tracked=self.tracks_generation)


@dataclass(frozen=True)
class KubeStrategyDeps:
    """What the built-in kinds' strategies need from the server, given by the
    composition root. ``escalation``: the RBAC kinds' check (None: authorization is not
    RBAC, nothing to escalate)."""

    escalation: EscalationCheck | None = None
    # (group, kind) -> the kind's validation: kube's built-in kinds' and those of the
    # other kinds the server serves through the same handlers (APIService, the CRD)
    kind_rules: Mapping[tuple[str, str], KindStrategy] = field(default_factory=dict)
    # (group, version, kind, object) -> the object defaulted in place
    # (``proxy.kube.defaulting.default_object``); None: objects are stored as decoded
    defaulter: Callable[[str, str, str, JSONObject], object] | None = None
    # (group, plural) -> what the other kinds served here add to a DELETE (the CRD's
    # cleanup finalizer), given by the composition root
    deletion_rules: Mapping[tuple[str, str], DeletionRules] = field(default_factory=dict)


_RBAC_GROUP = "rbac.authorization.k8s.io"
_CSR = ("certificates.k8s.io", "certificatesigningrequests")
# (group, plural, subresource) -> the route's own strategy, where it needs no deps
_KIND_STRATEGIES: dict[tuple[str, str, str], type[GenericStrategy]] = {
    (*_CSR, ""): CSRStrategy,
    (*_CSR, "approval"): CSRApprovalStrategy,
    (*_CSR, "status"): CSRStatusStrategy,
    ("policy", "poddisruptionbudgets", ""): PDBStrategy,
    **{(group, plural, "status"): MetadataStatusStrategy
       for group, plural in _STATUS_WITH_METADATA},
}


# Built-in resources whose strategy tracks metadata.generation (PrepareForCreate sets 1,
# PrepareForUpdate bumps it when the spec changes), as kube-apiserver 1.37's; pods since
# 1.33 (KEP-5067). Every other built-in kind has none (ConfigMap, Namespace, Service,
# APIService, ...); custom resources all do (the generic strategy's default).
_GENERATION_TRACKED = frozenset({
    ("", "pods"), ("", "replicationcontrollers"), ("", "podtemplates"),
    ("apps", "deployments"), ("apps", "replicasets"), ("apps", "statefulsets"),
    ("apps", "daemonsets"), ("batch", "jobs"), ("batch", "cronjobs"),
    ("autoscaling", "horizontalpodautoscalers"), ("policy", "poddisruptionbudgets"),
    ("networking.k8s.io", "networkpolicies"), ("networking.k8s.io", "ingresses"),
    ("networking.k8s.io", "ingressclasses"), ("discovery.k8s.io", "endpointslices"),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"),
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies"),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings"),
    ("flowcontrol.apiserver.k8s.io", "flowschemas"),
    ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"),
    ("resource.k8s.io", "deviceclasses"), ("resource.k8s.io", "resourceslices"),
    ("resource.k8s.io", "devicetaintrules"),
    ("apiextensions.k8s.io", "customresourcedefinitions"),
})  # fmt: skip


def strategy_for(
    resource: ResourceInfo, subresource: str, deps: KubeStrategyDeps
) -> GenericStrategy:
    """The strategy of a built-in ``resource`` written through ``subresource``: its
    kind's rules, defaulting and generation tracking."""
    strategy = _kind_strategy(resource, subresource, deps)
    defaulter = None
    if deps.defaulter is not None:
        defaulter = functools.partial(
            deps.defaulter, resource.group, resource.version, resource.kind
        )
    kind = (resource.group, resource.plural)
    tracked = kind in _GENERATION_TRACKED
    deletion = _DELETION.get(kind) or deps.deletion_rules.get(kind) or strategy.deletion
    return dataclasses.replace(
        strategy, defaulter=defaulter, tracks_generation=tracked, deletion=deletion
    )


def _kind_strategy(
    resource: ResourceInfo, subresource: str, deps: KubeStrategyDeps
) -> GenericStrategy:
    rules = deps.kind_rules.get((resource.group, resource.kind))
    route = (resource.group, resource.plural, subresource)
    own = _KIND_STRATEGIES.get(route)
    if own is not None:
        return own(resource, subresource, rules)
    if subresource == "status":
        return StatusStrategy(resource, subresource, rules)
    if route == ("", "namespaces", "finalize"):
        return NamespaceFinalizeStrategy(resource, subresource, rules)
    if resource.group == _RBAC_GROUP and deps.escalation is not None:
        return RBACStrategy(resource, subresource, rules, escalation=deps.escalation)
    if route == ("", "namespaces", ""):
        return NamespaceStrategy(resource, subresource, rules)
    if (resource.group, resource.plural) == ("", "secrets"):
        return SecretStrategy(resource, subresource, rules)
    if route == ("", "pods", "ephemeralcontainers"):
        return EphemeralContainersStrategy(resource, subresource, rules)
    if route == ("", "pods", ""):
        return PodStrategy(resource, subresource, rules)
    return GenericStrategy(resource, subresource, rules)
