"""ObjectMeta rules of the generic registry (kube-apiserver's ``rest.BeforeCreate`` /
``rest.BeforeUpdate`` and the strategies' PrepareFor*): system fields set on create,
preserved on update, generation bumps, status-subresource splitting, and the names of
generated objects. Validation (of names too) is ``proxy.registry.validation``'s.

Pure functions on decoded objects; they raise ``StatusError`` (400/500).
"""

from __future__ import annotations

import copy
import datetime
import secrets
import uuid
from collections.abc import Callable

from proxy import apierrors
from proxy.apimachinery.equality import without_null
from proxy.registry.resources import ResourceInfo
from storage.interfaces import JSONObject

__all__ = [
    "check_name_matches_url",
    "ensure_namespace",
    "generate_name",
    "keep_status",
    "now_rfc3339",
    "prepare_for_create",
    "prepare_for_update",
    "take_status",
    "with_parts_of",
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
    *,
    tracked: bool = True,
) -> JSONObject:
    """Fill the system fields of a new object (mutates and returns ``obj``).

    Namespace: the request's for namespaced resources (a conflicting one in the body is
    400), cleared for cluster-scoped ones. Name from ``generateName`` when unset (the
    name is validated afterwards, by ``validation.validate_create``).
    ``metadata.resourceVersion`` must be empty (as upstream's store refuses it).
    Server-owned fields are set: uid, creationTimestamp, generation 1 where the kind's
    strategy tracks it (``tracked``; else none is kept). Status of a
    resource with a status subresource is kept as sent (upstream strategies reset some,
    we keep what the client wrote so tests and seeders can create complete objects).
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
    if tracked:
        meta["generation"] = 1
    else:
        meta.pop("generation", None)
    for system in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
        meta.pop(system, None)
    meta.pop("resourceVersion", None)
    return obj


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
        k: without_null(v)
        for k, v in obj.items()
        if k not in ("metadata", "status", "kind", "apiVersion")
    }


def with_parts_of(
    new: JSONObject, old: JSONObject, take: Callable[[JSONObject, JSONObject], None]
) -> JSONObject:
    """A subresource write (``/status``, a namespace's ``/finalize``): the stored ``old``
    with what ``take(merged, new)`` copies from ``new``, and ``new``'s resourceVersion
    (the precondition it was written against)."""
    merged = copy.deepcopy(old)
    take(merged, new)
    new_meta = new.get("metadata") or {}
    if new_meta.get("resourceVersion"):
        merged["metadata"]["resourceVersion"] = new_meta["resourceVersion"]
    return merged


def take_status(merged: JSONObject, new: JSONObject) -> None:
    """``new``'s status (or none) on ``merged``: what a ``/status`` write changes."""
    if "status" in new:
        merged["status"] = new["status"]
    else:
        merged.pop("status", None)


def keep_status(new: JSONObject, old: JSONObject) -> None:
    """The stored status on ``new``: the main resource of a kind with a status
    subresource ignores status changes."""
    if "status" in old:
        new["status"] = copy.deepcopy(old["status"])
    else:
        new.pop("status", None)


def prepare_for_update(
    new: JSONObject, old: JSONObject, *, tracked: bool = True
) -> JSONObject:
    """The server's fields of ``new`` replacing the stored ``old`` (mutates ``new``):
    uid, creationTimestamp, generation, deletionTimestamp are the server's (a missing
    uid is taken from old; a different one is left for validation to refuse); the
    generation bumps when anything but metadata and status changed, where the kind
    tracks it (``tracked``). The strategy
    decides first what of ``new`` the write may change (``with_parts_of``,
    ``keep_status``)."""
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
    if tracked and _spec_part(new) != _spec_part(old):
        generation += 1
    if generation:
        meta["generation"] = generation
    return new
