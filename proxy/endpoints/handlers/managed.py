"""What the REST handlers call: the field manager of a served resource, the manager
of a request, managedFields on create/update/patch, and server-side apply's request
checks (upstream's ``ValidatePatchOptions`` and the apply patcher's body decoding).

Every function here is synchronous and pure over decoded JSON; the handlers call
them inside their optimistic-update functions, so a retried write recomputes them
against the object it retries on.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from typing import Any

import orjson
import yaml
from aiohttp import web

from proxy import apierrors
from proxy.apimachinery.equality import decoded_equal
from proxy.endpoints import decoding, negotiation
from proxy.fieldmanager.field_manager import FieldManager, manager_or_user_agent
from proxy.fieldmanager.fieldpath import PathElement, Set
from proxy.registry.resources import ResourceInfo
from proxy.registry.rest import ResetFields
from proxy.request.warning import warning_header
from proxy.request.write_options import APPLY_PATCH, check_patch_options, force_of
from storage.interfaces import JSONObject

__all__ = [
    "APPLY_PATCH",
    "apply",
    "apply_through",
    "check_patch_options",
    "decode_apply_body",
    "field_manager",
    "keep_times_of_noop",
    "manager_of",
    "record_update",
    "strict_decoding",
]



def _reset_set(reset: ResetFields) -> Set:
    """The route strategy's reset fields as a field-path set."""
    out = Set()
    for path in reset:
        out.insert(tuple(PathElement.field(name) for name in path))
    return out


@functools.cache
def _builtin_manager(resource: ResourceInfo, subresource: str, reset: ResetFields) -> FieldManager:
    return FieldManager(
        resource.group, resource.version, resource.kind, subresource, _reset_set(reset)
    )


def field_manager(resource: ResourceInfo, subresource: str, reset: ResetFields) -> FieldManager:
    """The field manager of ``resource`` as written through ``subresource`` ("" for the
    object itself), owning nothing of ``reset`` (the route strategy's reset fields): a
    built-in kind's is made once; a custom kind's is made with its served version's type
    each time (cheap), so a CRD's new schema applies at once."""
    custom = resource.kind_schema
    if custom is None:
        return _builtin_manager(resource, subresource, reset)
    return FieldManager(
        resource.group, resource.version, resource.kind, subresource, _reset_set(reset),
        atom=custom.apply_type,
    )  # fmt: skip


def manager_of(request: web.Request) -> str:
    """``fieldManager``, else the User-Agent's product (``kubectl``, ``curl``...)."""
    return manager_or_user_agent(
        request.query.get("fieldManager", ""), request.headers.get("User-Agent", "")
    )


def record_update(
    request: web.Request,
    resource: ResourceInfo,
    subresource: str,
    reset: ResetFields,
    live: JSONObject | None,
    obj: JSONObject,
    sent: Any,
) -> JSONObject:
    """``obj`` (as it will be stored) with the managedFields of this write: ``live``
    is the stored object (None for a create), ``sent`` the managedFields the request
    carried (``metadata.managedFields`` of its body, before any server change);
    ``reset``: the route strategy's reset fields."""
    fm = field_manager(resource, subresource, reset)
    return set_managed_fields(obj, fm.update(live, obj, manager_of(request), sent))


def set_managed_fields(obj: JSONObject, entries: Any) -> JSONObject:
    """``obj`` carrying ``entries`` as its managedFields (none when empty)."""
    meta = obj.setdefault("metadata", {})
    if entries:
        meta["managedFields"] = entries
    else:
        meta.pop("managedFields", None)
    return obj


def _without(obj: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in keys}
    return {**obj, "metadata": meta}


def _untimed(entries: Any) -> Any:
    if not isinstance(entries, list):
        return entries
    return [{k: v for k, v in e.items() if k != "time"} if isinstance(e, dict) else e
            for e in entries]  # fmt: skip


def keep_times_of_noop(current: JSONObject, updated: JSONObject) -> None:
    """Upstream's ``IgnoreManagedFieldsTimestampsTransformer``: when a write changes
    nothing but managedFields times, ``updated`` keeps the stored managedFields (so the
    write is a no-op and nothing is written)."""
    old = (current.get("metadata") or {}).get("managedFields")
    new = (updated.get("metadata") or {}).get("managedFields")
    if old is None or new is None or old == new or _untimed(old) != _untimed(new):
        return
    ignored = ("managedFields", "resourceVersion")
    # as decoded objects: the stored one carries nulls (a pod template's
    # creationTimestamp) that the request's omits
    if decoded_equal(_without(current, *ignored), _without(updated, *ignored)):
        updated["metadata"]["managedFields"] = old


def sent_managed_fields(obj: Mapping[str, Any]) -> Any:
    """The managedFields a request body carries (None when it has none)."""
    meta = obj.get("metadata")
    return meta.get("managedFields") if isinstance(meta, dict) else None


def decode_apply_body(body: bytes) -> JSONObject:
    """The applied configuration (YAML or JSON); 400 ``error decoding YAML: ...``.
    JSON (what kubectl and the client libraries send) is read by the JSON decoder: the
    pure-Python YAML parser takes ~100 ms for a pod."""
    try:
        config = _fast_json(body)
        if config is _NOT_JSON:
            config = decoding.decode_structured(body, negotiation.YAML_TYPE)
    except ValueError as e:
        raise apierrors.bad_request(
            f"error decoding YAML: error converting YAML to JSON: {e}"
        ) from None
    if config is None:
        config = {}
    if not isinstance(config, dict):
        kind = "array" if isinstance(config, list) else "string"
        raise apierrors.bad_request(
            "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: "
            f"cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
        )
    return config


def apply(
    request: web.Request,
    resource: ResourceInfo,
    subresource: str,
    reset: ResetFields,
    live: JSONObject | None,
    config: JSONObject,
) -> JSONObject:
    """The object after the request's manager applies ``config`` onto ``live`` (None:
    create-on-apply), with its managedFields; Status errors as upstream (409 conflicts)."""
    fm = field_manager(resource, subresource, reset)
    return fm.apply(live, config, request.query.get("fieldManager", ""), force_of(request.query))


def apply_through(
    request: web.Request,
    resource: ResourceInfo,
    subresource: str,
    reset: ResetFields,
    kind: ResourceInfo,
    live: JSONObject | None,
    config: JSONObject,
) -> JSONObject:
    """:func:`apply` on a route whose objects are ``kind``: the resource's own kind, or
    an ``autoscaling/v1`` Scale (upstream's scale managed-fields handler: the Scale's
    replicas are applied as the parent's ``spec.replicas``, against the parent's
    managedFields, which the scale storage hands over on the live Scale; the answer is
    the new Scale carrying the parent's new managedFields)."""
    if (kind.group, kind.kind) != ("autoscaling", "Scale") or live is None:
        return apply(request, resource, subresource, reset, live, config)
    meta = dict(live.get("metadata") or {})
    parent: JSONObject = {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {k: meta[k] for k in ("name", "namespace", "managedFields") if k in meta},
    }
    spec = live.get("spec")
    if isinstance(spec, dict) and "replicas" in spec:
        parent["spec"] = {"replicas": spec["replicas"]}
    applied = apply(request, resource, subresource, reset, parent, scale_config(config, parent))
    meta.pop("managedFields", None)
    entries = sent_managed_fields(applied)
    if entries:
        meta["managedFields"] = entries
    replicas = (applied.get("spec") or {}).get("replicas")
    return {**live, "metadata": meta, "spec": {"replicas": replicas}}


def scale_config(scale: JSONObject, parent: JSONObject) -> JSONObject:
    """An applied autoscaling/v1 Scale as the parent object's configuration (only
    ``spec.replicas`` maps, as upstream's scale field-manager conversion)."""
    if scale.get("apiVersion") != "autoscaling/v1" or scale.get("kind") != "Scale":
        api_version = str(scale.get("apiVersion") or "")
        group, _, version = api_version.rpartition("/")
        raise apierrors.bad_request(
            f"invalid object type: {group}/{version}, Kind={scale.get('kind') or ''}"
        )
    meta = parent.get("metadata") or {}
    config: JSONObject = {
        "apiVersion": parent.get("apiVersion"),
        "kind": parent.get("kind"),
        "metadata": {k: meta[k] for k in ("name", "namespace") if k in meta},
    }
    spec = scale.get("spec")
    if isinstance(spec, dict) and "replicas" in spec:
        config["spec"] = {"replicas": spec["replicas"]}
    return config


def _duplicate_keys(node: yaml.Node) -> Iterator[str]:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            text = str(key.value)
            if text in seen:
                yield f'line {key.start_mark.line + 1}: key "{text}" already set in map'
            seen.add(text)
            yield from _duplicate_keys(value)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from _duplicate_keys(item)


_NOT_JSON: Any = object()


def _fast_json(body: bytes) -> Any:
    """``body`` decoded as JSON when it is a JSON object within the depth limit."""
    if not body.lstrip().startswith(b"{"):
        return _NOT_JSON
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return _NOT_JSON
    return _NOT_JSON if decoding.too_deep(value) else value


class _Duplicate(Exception):
    pass


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Duplicate
    return out


def _json_without_duplicates(body: bytes) -> bool:
    """True when ``body`` is JSON with no duplicate key (the C decoder decides; the YAML
    parser, which words upstream's message, runs only when there is one)."""
    try:
        json.loads(body, object_pairs_hook=_refuse_duplicates)
    except _Duplicate:
        return False
    except (ValueError, RecursionError):
        return False
    return True


def strict_decoding(body: bytes, mode: str) -> list[str]:
    """The apply patcher's check after a successful apply (upstream's
    ``yaml.UnmarshalStrict``): duplicate keys are 400 ``error strict decoding YAML``
    under fieldValidation=Strict, Warning headers under Warn, nothing under Ignore."""
    if mode == "Ignore" or _json_without_duplicates(body):
        return []
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when built with it
    try:
        root = yaml.compose(body, Loader=loader)
    except yaml.YAMLError:
        return []
    found = list(_duplicate_keys(root)) if root is not None else []
    if found and mode == "Strict":
        raise apierrors.bad_request(
            "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal "
            "errors:\n  " + "\n  ".join(found)
        )
    return [warning_header(w) for w in found]
