"""ObjectMeta rules of the generic registry (kube-apiserver's ``rest.BeforeCreate`` /
``rest.BeforeUpdate`` and the strategies' PrepareFor*): system fields set on create,
preserved on update, generation bumps, status-subresource splitting, and the names of
generated objects. Validation (of names too) is ``proxy.registry.validation``'s.

Pure functions on decoded objects; they raise ``StatusError`` (400/500).
"""

from __future__ import annotations

import base64
import copy
import datetime
import secrets
import uuid
from collections.abc import Callable

from proxy import apierrors
from proxy.registry.resources import SERVED, ResourceInfo
from storage.interfaces import JSONObject

__all__ = [
    "check_name_matches_url",
    "ensure_namespace",
    "generate_name",
    "now_rfc3339",
    "prepare_for_create",
    "prepare_for_update",
]


# apimachinery's names.SimpleNameGenerator alphabet (no vowels, no confusable digits).
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
_RANDOM_LENGTH = 5
_MAX_GENERATED_BASE = 63 - _RANDOM_LENGTH


def now_rfc3339(clock: Callable[[], datetime.datetime] | None = None) -> str:
    now = clock() if clock else datetime.datetime.now(datetime.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def generate_name(base: str) -> str:
    """``base`` + 5 random characters, base truncated so the result fits 63."""
    suffix = "".join(secrets.choice(_ALPHANUMS) for _ in range(_RANDOM_LENGTH))
    return base[:_MAX_GENERATED_BASE] + suffix


def _metadata(obj: JSONObject) -> JSONObject:
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise apierrors.bad_request("metadata must be an object")
    return meta


def _parsed_resource_version(value: object) -> int:
    """The resourceVersion as the etcd3 store's versioner reads it on create: an unsigned
    integer; anything that does not parse counts as unset (and is cleared on write)."""
    text = value if isinstance(value, str) else ""
    parsed = int(text) if text.isascii() and text.isdigit() else 0
    return parsed if parsed < 1 << 64 else 0


def ensure_namespace(obj: JSONObject, resource: ResourceInfo, namespace: str) -> JSONObject:
    """Set the request's namespace on a namespaced object (400 for a conflicting one
    in the body; upstream's ``EnsureObjectNamespaceMatchesRequestNamespace``, before
    admission), clear it on a cluster-scoped one; returns the metadata."""
    meta = _metadata(obj)
    body_ns = meta.get("namespace") or ""
    if resource.namespaced:
        if body_ns and body_ns != namespace:
            raise apierrors.bad_request(
                "the namespace of the provided object does not match the namespace sent "
                "on the request"
            )
        meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
    return meta


def prepare_for_create(
    obj: JSONObject,
    resource: ResourceInfo,
    namespace: str,
    clock: Callable[[], datetime.datetime] | None = None,
) -> JSONObject:
    """Fill the system fields of a new object (mutates and returns ``obj``).

    Namespace: the request's for namespaced resources (a conflicting one in the body is
    400), cleared for cluster-scoped ones. Name from ``generateName`` when unset (the
    name is validated afterwards, by ``validation.validate_create``).
    ``metadata.resourceVersion`` must be empty (as upstream's store refuses it).
    Server-owned fields are set: uid, creationTimestamp, generation 1 where the kind
    tracks it (:func:`tracks_generation`). Status of a resource with a status
    subresource is kept as sent (upstream strategies reset some, we keep what the
    client wrote so tests and seeders can create complete objects).
    """
    meta = ensure_namespace(obj, resource, namespace)
    if _parsed_resource_version(meta.pop("resourceVersion", None)):
        # upstream's etcd3 store returns a plain error here: 500, no reason
        raise apierrors.unknown_error("resourceVersion should not be set on objects to be created")
    name = meta.get("name") or ""
    if not name and meta.get("generateName"):
        name = meta["name"] = generate_name(str(meta["generateName"]))
    meta["uid"] = str(uuid.uuid4())
    meta["creationTimestamp"] = now_rfc3339(clock)
    if tracks_generation(resource):
        meta["generation"] = 1
    else:
        meta.pop("generation", None)
    if resource.plural == "namespaces":
        _namespace_defaults(obj, str(name))
    elif is_core(resource, "secrets"):
        secret_defaults(obj)
    elif resource.plural == "pods" and not obj.get("status"):
        obj["status"] = {"phase": "Pending", "qosClass": pod_qos_class(obj)}
    for system in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
        meta.pop(system, None)
    meta.pop("resourceVersion", None)
    return obj


# Built-in resources whose strategy tracks metadata.generation (PrepareForCreate sets 1,
# PrepareForUpdate bumps it when the spec changes), as kube-apiserver 1.37's; pods since
# 1.33 (KEP-5067). Every other built-in kind has none (ConfigMap, Namespace, Service,
# ...); custom resources all do.
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
_BUILTIN_GROUPS = frozenset(group for group, _, _ in SERVED) | {"apiregistration.k8s.io"}


def tracks_generation(resource: ResourceInfo) -> bool:
    """Whether ``metadata.generation`` is set and bumped for ``resource``'s objects."""
    if resource.group not in _BUILTIN_GROUPS:
        return True  # a custom resource
    return (resource.group, resource.plural) in _GENERATION_TRACKED


def is_core(resource: ResourceInfo, plural: str) -> bool:
    return resource.group == "" and resource.plural == plural


def secret_defaults(obj: JSONObject) -> None:
    """As the Secret's conversion and defaulting on every write: ``stringData`` (write
    only) is merged into ``data`` base64-encoded, its keys winning; type ``Opaque``."""
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        current = obj.get("data")
        data: JSONObject = current if isinstance(current, dict) else {}
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        obj["data"] = data
    if not obj.get("type"):
        obj["type"] = "Opaque"


def _namespace_defaults(obj: JSONObject, name: str) -> None:
    """What kube-apiserver's namespace strategy sets on create: the immutable
    ``kubernetes.io/metadata.name`` label, the ``kubernetes`` finalizer, phase Active."""
    labels = obj["metadata"].setdefault("labels", {})
    if isinstance(labels, dict):
        labels["kubernetes.io/metadata.name"] = name
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict) and not spec.get("finalizers"):
        spec["finalizers"] = ["kubernetes"]
    obj["status"] = {"phase": "Active"}


def pod_qos_class(pod: JSONObject) -> str:
    """The pod's QoS class, as kube's ``qos.GetPodQOS`` decides it for cpu and memory:
    no requests or limits at all → BestEffort; every container with limits equal to
    requests for both → Guaranteed; anything else → Burstable."""
    spec = pod.get("spec") if isinstance(pod.get("spec"), dict) else {}
    containers = [
        c
        for key in ("initContainers", "containers")
        for c in (spec or {}).get(key) or []
        if isinstance(c, dict)
    ]
    any_set = False
    guaranteed = bool(containers)
    for c in containers:
        res = c.get("resources") if isinstance(c.get("resources"), dict) else {}
        requests = (res or {}).get("requests") or {}
        limits = (res or {}).get("limits") or {}
        if any(requests.get(r) or limits.get(r) for r in ("cpu", "memory")):
            any_set = True
        for r in ("cpu", "memory"):
            limit = limits.get(r)
            if not limit or requests.get(r, limit) != limit:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def check_name_matches_url(
    obj: JSONObject, name: str, namespace: str, resource: ResourceInfo
) -> None:
    """PUT/PATCH: the body's name and namespace must match the URL (400, upstream wording)."""
    meta = obj.get("metadata") or {}
    obj_name = meta.get("name", "")
    if not obj_name:  # the namer cannot read a name: errEmptyName
        raise apierrors.bad_request(
            f"the name of the object ({name} based on URL) was undeterminable: "
            "name must be provided"
        )
    if obj_name != name:
        raise apierrors.bad_request(
            f"the name of the object ({obj_name}) does not match the name on the URL ({name})"
        )
    obj_ns = meta.get("namespace") or ""
    if resource.namespaced and obj_ns and obj_ns != namespace:
        raise apierrors.bad_request(
            f"the namespace of the object ({obj_ns}) does not match the namespace on the "
            f"request ({namespace})"
        )


def _spec_part(obj: JSONObject) -> JSONObject:
    """Everything generation tracks: all but metadata, status, kind, apiVersion; a
    null member is the same as an absent one (a Go typed round trip writes a zero
    ``creationTimestamp`` of a pod template as null, a decoded patch result may omit it)."""
    return {
        k: _without_nulls(v)
        for k, v in obj.items()
        if k not in ("metadata", "status", "kind", "apiVersion")
    }


def _without_nulls(value: object) -> object:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _approval_update(new: JSONObject, old: JSONObject) -> JSONObject:
    """csrApprovalStrategy's PrepareForUpdate: only ``status.conditions`` change; a
    condition's timestamps default to now, ``lastTransitionTime`` to the stored one of
    a condition of the same type and status (``populateConditionTimestamps``)."""
    merged = copy.deepcopy(old)
    sent = (new.get("status") or {}).get("conditions") or []
    before = {
        (c.get("type"), c.get("status")): c
        for c in (old.get("status") or {}).get("conditions") or [] if isinstance(c, dict)
    }  # fmt: skip
    now = now_rfc3339()
    conditions = []
    for condition in sent if isinstance(sent, list) else []:
        if not isinstance(condition, dict):
            continue
        condition = {**condition, "status": condition.get("status") or "True"}
        condition.setdefault("lastUpdateTime", now)
        stored = before.get((condition.get("type"), condition["status"]))
        kept = stored.get("lastTransitionTime") if stored else None
        condition.setdefault("lastTransitionTime", kept or now)
        conditions.append(condition)
    status = merged.setdefault("status", {})
    if conditions:
        status["conditions"] = conditions
    else:
        status.pop("conditions", None)
    new_meta = new.get("metadata") or {}
    if new_meta.get("resourceVersion"):
        merged["metadata"]["resourceVersion"] = new_meta["resourceVersion"]
    return merged


def prepare_for_update(
    new: JSONObject, old: JSONObject, resource: ResourceInfo, subresource: str
) -> JSONObject:
    """Merge a PUT/PATCH result ``new`` onto the stored ``old`` (mutates ``new``).

    - the main resource of a kind with a status subresource ignores status changes;
      ``/status`` takes only the status (and keeps everything else as stored);
    - uid, creationTimestamp, generation, deletionTimestamp are the server's: a
      missing uid is taken from old (a different one is left for validation to refuse);
    - generation bumps when anything but metadata/status changed.
    """
    if subresource == "status":
        merged = copy.deepcopy(old)
        if "status" in new:
            merged["status"] = new["status"]
        else:
            merged.pop("status", None)
        new_meta = new.get("metadata") or {}
        if new_meta.get("resourceVersion"):
            merged["metadata"]["resourceVersion"] = new_meta["resourceVersion"]
        new = merged
    elif subresource == "approval":  # certificatesigningrequests/NAME/approval
        new = _approval_update(new, old)
    elif subresource == "finalize":  # namespaces/NAME/finalize: only spec.finalizers
        merged = copy.deepcopy(old)
        merged.setdefault("spec", {})["finalizers"] = list(
            (new.get("spec") or {}).get("finalizers") or [])
        if not merged["spec"]["finalizers"]:
            del merged["spec"]["finalizers"]
        new_meta = new.get("metadata") or {}
        if new_meta.get("resourceVersion"):
            merged["metadata"]["resourceVersion"] = new_meta["resourceVersion"]
        new = merged
    elif resource.has_status:
        if "status" in old:
            new["status"] = copy.deepcopy(old["status"])
        else:
            new.pop("status", None)
    if is_core(resource, "secrets"):
        secret_defaults(new)
    meta = _metadata(new)
    old_meta = old.get("metadata") or {}
    if not meta.get("uid"):  # a different one is refused by validation.validate_update
        meta["uid"] = old_meta.get("uid")
    for system in ("creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
        if system in old_meta:
            meta[system] = old_meta[system]
        else:
            meta.pop(system, None)
    meta.pop("selfLink", None)
    generation = int(old_meta.get("generation") or 0)
    tracked = tracks_generation(resource)
    if tracked and subresource != "status" and _spec_part(new) != _spec_part(old):
        generation += 1
    if generation:
        meta["generation"] = generation
    else:  # a kind without generation keeps none (a client cannot set it)
        meta.pop("generation", None)
    return new
