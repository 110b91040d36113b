"""AdmissionReview v1: the request a webhook gets and the checks of its answer (kube's
``webhook/request``). Pure functions, no I/O."""

from __future__ import annotations

import uuid
from typing import Any

from proxy.admission.attributes import Attributes

__all__ = ["CallFailed", "InvalidResponse", "create_review", "verify_response"]

JSON = dict[str, Any]
REVIEW_API_VERSION = "admission.k8s.io/v1"


class CallFailed(Exception):
    """A failed call (upstream's ``ErrCallingWebhook``): handled per failurePolicy."""


class InvalidResponse(Exception):
    """The answer is not a usable AdmissionReview (``received invalid webhook
    response: ...`` upstream)."""


def create_review(attrs: Attributes) -> JSON:
    """The AdmissionReview v1 sent for ``attrs`` (a new uid per call)."""
    group, version, kind = attrs.kind
    res = attrs.resource
    request: JSON = {
        "uid": str(uuid.uuid4()),
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": res.group, "version": res.version, "resource": res.plural},
        "requestKind": {"group": group, "version": version, "kind": kind},
        "requestResource": {"group": res.group, "version": res.version, "resource": res.plural},
        "operation": attrs.operation,
        "userInfo": attrs.user.to_api() if attrs.user else {},
        "object": attrs.object,
        "oldObject": attrs.old_object,
        "dryRun": attrs.dry_run,
        "options": attrs.options or None,
    }
    if attrs.subresource:
        request["subResource"] = request["requestSubResource"] = attrs.subresource
    if attrs.name:
        request["name"] = attrs.name
    if attrs.namespace:
        request["namespace"] = attrs.namespace
    return {"apiVersion": REVIEW_API_VERSION, "kind": "AdmissionReview", "request": request}


def _gvk(answer: JSON) -> str:
    api_version = str(answer.get("apiVersion") or "")
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={answer.get('kind') or ''}"


def verify_response(uid: str, mutating: bool, answer: JSON) -> JSON:
    """The ``response`` of a webhook's answer, or ``InvalidResponse`` with upstream's
    reason."""
    if answer.get("apiVersion") != REVIEW_API_VERSION or answer.get("kind") != "AdmissionReview":
        raise InvalidResponse(
            f"expected webhook response of {REVIEW_API_VERSION}, Kind=AdmissionReview, "
            f"got {_gvk(answer)}"
        )
    response = answer.get("response")
    if not isinstance(response, dict):
        raise InvalidResponse("webhook response was absent")
    if response.get("uid") != uid:
        raise InvalidResponse(f'expected response.uid="{uid}", got "{response.get("uid", "")}"')
    patch, patch_type = response.get("patch"), response.get("patchType")
    if not mutating and (patch or patch_type):
        raise InvalidResponse("validating webhooks may not return patches")
    if patch and not patch_type:
        raise InvalidResponse("webhook returned response.patch but not response.patchType")
    if patch_type and patch_type != "JSONPatch":
        raise InvalidResponse(f'webhook returned invalid response.patchType of "{patch_type}"')
    return response
