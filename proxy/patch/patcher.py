"""PATCH: the patch media types and how each applies, dispatched in one place.

- ``application/json-patch+json``: RFC 6902 via ``jsonpatch``; a malformed patch is 400,
  a failing operation (including ``test``) is 422 as upstream's
  ``NewGenericServerResponse(422, ...)``.
- ``application/merge-patch+json``: RFC 7386 (null deletes, objects merge, the rest
  replaces).
- ``application/strategic-merge-patch+json``: ``proxy.patch.strategic`` with the
  kind's schema (patch merge keys and strategies) from ``proxy.openapi.schemas``.
- ``application/apply-patch+yaml`` (server-side apply): 415 for now.

The patched object then goes through the same update path as a PUT.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import jsonpatch
import orjson

from proxy import apierrors
from proxy.endpoints import negotiation
from proxy.registry.resources import ResourceInfo
from storage.interfaces import JSONObject

__all__ = ["JSON_PATCH", "MERGE_PATCH", "STRATEGIC_MERGE_PATCH", "apply_patch", "merge_patch"]


JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# Strategic merge patch: fn(original, patch, resource) -> patched; None if unavailable.
StrategicFn = Callable[[JSONObject, JSONObject, ResourceInfo], JSONObject]


def _strategic() -> StrategicFn | None:
    """The strategic merge patch of ``proxy.patch.strategic``, driven by the kind's
    schema from ``proxy.openapi.schemas``; its errors carry kube-apiserver's code and reason."""
    try:
        smp = importlib.import_module("proxy.patch.strategic")
        schemas = importlib.import_module("proxy.openapi.schemas")
    except ImportError:
        return None

    def apply(original: JSONObject, patch_: JSONObject, resource: ResourceInfo) -> JSONObject:
        node = schemas.kind_schema(resource.group, resource.version, resource.kind)
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


def _decode_patch(body: bytes) -> Any:
    try:
        patch = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise apierrors.bad_request(f"error decoding patch: {e}") from None
    if negotiation.too_deep(patch):
        raise apierrors.bad_request(
            f"error decoding patch: exceeded max depth of {negotiation.MAX_DEPTH}"
        )
    return patch


def decoded_patch(body: bytes) -> Any:
    """The patch document (for error messages); None if it does not decode."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


def _json_patch(current: JSONObject, body: bytes) -> JSONObject:
    ops = _decode_patch(body)
    if not isinstance(ops, list):
        raise apierrors.bad_request(
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
        )
    try:
        patch = jsonpatch.JsonPatch(ops)
    except (jsonpatch.InvalidJsonPatch, TypeError) as e:
        raise apierrors.bad_request(str(e)) from None
    try:
        result = patch.apply(current)
    except jsonpatch.JsonPatchTestFailed:
        path = _failed_test_path(patch, current)
        # evanphx/json-patch's wording, which kube-apiserver passes through
        raise apierrors.unexpected_server_response(
            422, f"testing value {path} failed: test failed"
        ) from None
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, KeyError) as e:
        raise apierrors.unexpected_server_response(422, str(e)) from None
    if not isinstance(result, dict):
        raise apierrors.unexpected_server_response(422, "patched document is not an object")
    return result


def _failed_test_path(patch: jsonpatch.JsonPatch, current: JSONObject) -> str:
    """The path of the first ``test`` operation that fails on ``current``."""
    doc: Any = current
    for op in patch._ops:  # type: ignore[attr-defined]
        try:
            doc = op.apply(doc)
        except jsonpatch.JsonPatchTestFailed:
            return str(op.location)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, KeyError):
            break
    return ""


def _merge_patch(current: JSONObject, body: bytes) -> JSONObject:
    patch = _decode_patch(body)
    if not isinstance(patch, dict):
        raise apierrors.bad_request(
            "json: cannot unmarshal into Go value of type map[string]interface {}"
        )
    result: JSONObject = merge_patch(current, patch)
    return result


def apply_patch(
    media_type: str, current: JSONObject, body: bytes, resource: ResourceInfo
) -> JSONObject:
    """The patched copy of ``current`` (not mutated). 415 for an unsupported type."""
    if media_type == JSON_PATCH:
        return _json_patch(current, body)
    if media_type == MERGE_PATCH:
        return _merge_patch(current, body)
    if media_type == STRATEGIC_MERGE_PATCH:
        fn = _strategic()
        if fn is not None:
            patch = _decode_patch(body)
            if not isinstance(patch, dict):
                raise apierrors.bad_request("strategic merge patch must be a JSON object")
            return fn(current, patch, resource)
    raise apierrors.unsupported_media_type(media_type, supported_patch_types())


def check_patch_type(media_type: str) -> None:
    """415 before any storage work when the patch media type is not supported."""
    if media_type not in supported_patch_types():
        raise apierrors.unsupported_media_type(media_type, supported_patch_types())
