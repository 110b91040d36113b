"""PATCH: the patch media types and how each applies, dispatched in one place.

- ``application/json-patch+json``: RFC 6902 via ``jsonpatch``; a malformed patch is 400,
  a failing operation (including ``test``) is 422 as upstream's
  ``NewGenericServerResponse(422, ...)``.
- ``application/merge-patch+json``: RFC 7386 (null deletes, objects merge, the rest
  replaces).
- ``application/strategic-merge-patch+json``: ``proxy.patch.strategic`` with the
  kind's schema (patch merge keys and strategies) from ``proxy.openapi.schemas``.
- ``application/apply-patch+yaml`` (server-side apply): not a patch of the object but
  a configuration merged by ``proxy.fieldmanager`` (the handlers dispatch it there).

The patched object then goes through the same update path as a PUT.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import jsonpatch
import orjson

from proxy import apierrors
from proxy.endpoints import decoding
from proxy.registry.resources import ResourceInfo
from proxy.request.write_options import APPLY_PATCH
from storage.interfaces import JSONObject

__all__ = ["JSON_PATCH", "MERGE_PATCH", "STRATEGIC_MERGE_PATCH", "apply_patch", "merge_patch"]


JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"

# Strategic merge patch: fn(original, patch, resource) -> patched; None if unavailable.
StrategicFn = Callable[[JSONObject, JSONObject, ResourceInfo], JSONObject]


def _strategic() -> StrategicFn | None:
    """The strategic merge patch of ``proxy.patch.strategic``, driven by the kind's
    schema (``ResourceInfo.request_schema``); its errors carry kube-apiserver's code and reason."""
    try:
        smp = importlib.import_module("proxy.patch.strategic")
    except ImportError:
        return None

    def apply(original: JSONObject, patch_: JSONObject, resource: ResourceInfo) -> JSONObject:
        node = resource.request_schema()
        try:
            result: JSONObject = smp.apply_strategic_merge_patch(original, patch_, node)
        except smp.StrategicMergePatchError as e:
            code = int(e.status_code)
            raise apierrors.StatusError(
                apierrors.status_body(code, e.reason or "", e.message)
            ) from None
        return result

    return apply


def supported_patch_types() -> list[str]:
    types = [JSON_PATCH, MERGE_PATCH]
    if _strategic() is not None:
        types.append(STRATEGIC_MERGE_PATCH)
    types.append(APPLY_PATCH)
    return types


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    result: JSONObject = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _decode_patch(body: bytes, prefix: str = "error decoding patch: ") -> Any:
    """The patch document; 400 ``<prefix><decoder error>`` (upstream's strategic merge
    patch path reports the decoder's error without the prefix)."""
    try:
        patch = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise apierrors.bad_request(f"{prefix}{e}") from None
    if decoding.too_deep(patch):
        raise apierrors.bad_request(f"{prefix}exceeded max depth of {decoding.MAX_DEPTH}")
    return patch


_TO_MAP = "Go value of type map[string]interface {}"


def decoded_patch(body: bytes) -> Any:
    """The patch document (for error messages); None if it does not decode."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


_GO_JSON_KINDS = {dict: "object", list: "array", str: "string", bool: "bool", int: "number",
                  float: "number"}  # fmt: skip


def _go_kind(value: Any) -> str:
    return _GO_JSON_KINDS.get(type(value), "value")


def _patch_ops_error(ops: Any) -> str:
    """What Go's json.Unmarshal says decoding ``ops`` into kube's ``[]jsonPatchOp`` (op,
    path and from are strings), or "" when it decodes."""
    if ops is None:
        return ""
    if not isinstance(ops, list):
        return (
            f"json: cannot unmarshal {_go_kind(ops)} into Go value of type []handlers.jsonPatchOp"
        )
    for op in ops:
        if op is None:
            continue
        if not isinstance(op, dict):
            return (
                f"json: cannot unmarshal {_go_kind(op)} into Go value of type handlers.jsonPatchOp"
            )
        for field in ("op", "path", "from"):
            value = op.get(field)
            if value is not None and not isinstance(value, str):
                return (
                    f"json: cannot unmarshal {_go_kind(value)} into Go struct field "
                    f"jsonPatchOp.{field} of type string"
                )
    return ""


def _json_patch(current: JSONObject, body: bytes, mode: str = "Warn") -> JSONObject:
    """RFC 6902 as kube-apiserver applies it: under fieldValidation Warn (the default) or
    Strict the operations are first decoded as its ``[]jsonPatchOp`` (400 ``error decoding
    patch: ...``); an operation that cannot be applied (unknown op, missing member, bad
    pointer, failed test) is a 422 with the generic message and empty details."""
    ops = _decode_patch(body)
    if mode != "Ignore":
        problem = _patch_ops_error(ops)
        if problem:
            raise apierrors.bad_request(f"error decoding patch: {problem}")
    if ops is None:
        ops = []  # null decodes as an empty patch
    if not isinstance(ops, list):
        raise apierrors.bad_request(
            f"json: cannot unmarshal {_go_kind(ops)} into Go value of type jsonpatch.Patch"
        )
    try:
        patch = jsonpatch.JsonPatch(ops)
    except (jsonpatch.InvalidJsonPatch, jsonpatch.JsonPointerException, TypeError) as e:
        # upstream finds these when applying the operation
        raise apierrors.unexpected_server_response(422, str(e)) from None
    try:
        result = patch.apply(current)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, KeyError) as e:
        raise apierrors.unexpected_server_response(422, str(e)) from None
    if not isinstance(result, dict):
        raise apierrors.unexpected_server_response(422, "patched document is not an object")
    return result


def _merge_patch(current: JSONObject, body: bytes) -> JSONObject:
    patch = _decode_patch(body)
    if patch is None:  # evanphx/json-patch's MergePatch of null
        raise apierrors.bad_request("Invalid JSON Patch")
    if not isinstance(patch, dict):
        raise apierrors.bad_request(
            f"error decoding patch: json: cannot unmarshal {_go_kind(patch)} into {_TO_MAP}"
        )
    result: JSONObject = merge_patch(current, patch)
    return result


def apply_patch(
    media_type: str, current: JSONObject, body: bytes, resource: ResourceInfo, mode: str = "Warn"
) -> JSONObject:
    """The patched copy of ``current`` (not mutated). 415 for an unsupported type.
    ``mode`` is the request's fieldValidation (it changes how a JSON patch decodes)."""
    if media_type == JSON_PATCH:
        return _json_patch(current, body, mode)
    if media_type == MERGE_PATCH:
        return _merge_patch(current, body)
    if media_type == STRATEGIC_MERGE_PATCH:
        fn = _strategic()
        if fn is not None:
            patch = _decode_patch(body, prefix="")
            if patch is None:  # decodes as an empty map: nothing changes
                return current
            if not isinstance(patch, dict):
                raise apierrors.bad_request(
                    f"json: cannot unmarshal {_go_kind(patch)} into {_TO_MAP}"
                )
            return fn(current, patch, resource)
    raise apierrors.unsupported_media_type(media_type, supported_patch_types())


def check_patch_type(media_type: str) -> None:
    """415 before any storage work when the patch media type is not supported (a type
    the PATCH route does not consume at all is refused earlier, by
    ``proxy.endpoints.restful_route``)."""
    if media_type not in supported_patch_types():
        raise apierrors.unsupported_media_type(media_type, supported_patch_types())
