"""The write strategies of CertificateSigningRequests and PodDisruptionBudgets beyond
the generic ones (upstream's ``pkg/registry/certificates/certificates/strategy.go`` and
``pkg/registry/policy/poddisruptionbudget/strategy.go``).

A CSR is created with its requester's identity (``spec.username``, ``uid``, ``groups``,
``extra``, from the authenticated user, whatever the body says) and no status. Its
three routes change three different things, so approving and issuing stay apart:

- the object itself: the spec only (status kept);
- ``/approval``: only ``status.conditions``; Approved and Denied are mutually exclusive,
  and neither may be removed once set;
- ``/status``: the rest of the status (the signer's ``certificate``, a ``Failed``
  condition); the Approved and Denied conditions may not be added or removed there, and
  an issued certificate may not change.

New conditions get ``lastUpdateTime`` and ``lastTransitionTime`` now when unset.

A PodDisruptionBudget is created with an empty status: only the disruption controller
(and the eviction subresource) write it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from proxy import apierrors
from proxy.apierrors import FieldError
from proxy.registry import object_meta
from proxy.registry.rest import Context
from proxy.registry.strategy import GenericStrategy, StatusStrategy
from storage.interfaces import JSONObject

__all__ = ["CSRApprovalStrategy", "CSRStatusStrategy", "CSRStrategy", "PDBStrategy"]

JSON = dict[str, Any]
_DECISIONS = ("Approved", "Denied")
_GROUP_KIND = "CertificateSigningRequest.certificates.k8s.io"


def _conditions(obj: JSONObject) -> list[JSON]:
    status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
    return [c for c in (status or {}).get("conditions") or [] if isinstance(c, dict)]


def _stamp_conditions(new: JSONObject, old: JSONObject) -> None:
    """``populateConditionTimestamps``: a condition's times are now when unset, or
    its old transition time when its status did not change."""
    now = object_meta.now_rfc3339()
    previous = {c.get("type"): c for c in _conditions(old)}
    for c in _conditions(new):
        if not c.get("lastUpdateTime"):
            c["lastUpdateTime"] = now
        if not c.get("lastTransitionTime"):
            before = previous.get(c.get("type")) or {}
            same = before.get("status") == c.get("status") and before.get("lastTransitionTime")
            c["lastTransitionTime"] = before["lastTransitionTime"] if same else now


def _decision_errors(new: JSONObject, old: JSONObject, *, may_add: bool) -> list[FieldError]:
    """Approved/Denied: exclusive, never removed, and added only through /approval."""
    errs: list[FieldError] = []
    new_types = [str(c.get("type")) for c in _conditions(new)]
    old_types = {str(c.get("type")) for c in _conditions(old)}
    if "Approved" in new_types and "Denied" in new_types:
        index = new_types.index("Denied" if new_types.index("Approved") < new_types.index(
            "Denied") else "Approved")  # fmt: skip
        errs.append(FieldError.invalid(f"status.conditions[{index}].type", new_types[index],
                                       "Approved and Denied conditions are mutually "
                                       "exclusive"))  # fmt: skip
    for kind in _DECISIONS:
        if kind in old_types and kind not in new_types:
            errs.append(FieldError.forbidden(
                "status.conditions", f'updates may not remove a condition of type "{kind}"'))
        if not may_add and kind in new_types and kind not in old_types:
            errs.append(FieldError.forbidden(
                "status.conditions", f'updates may not add a condition of type "{kind}"'))
    return errs


def _raise(obj: JSONObject, errs: list[FieldError]) -> None:
    if errs:
        name = str((obj.get("metadata") or {}).get("name") or "")
        raise apierrors.invalid(_GROUP_KIND, name, errs)


@dataclass(frozen=True)
class CSRStrategy(GenericStrategy):
    """A CSR itself: created with its requester's identity and no status."""

    def prepare_for_create(self, ctx: Context, obj: JSONObject) -> JSONObject:
        obj = super().prepare_for_create(ctx, obj)
        spec = obj.setdefault("spec", {})
        for key in ("username", "uid", "groups", "extra"):
            spec.pop(key, None)
        if ctx.user is not None:
            if ctx.user.name:
                spec["username"] = ctx.user.name
            if ctx.user.uid:
                spec["uid"] = ctx.user.uid
            if ctx.user.groups:
                spec["groups"] = list(ctx.user.groups)
            if ctx.user.extra:
                spec["extra"] = {k: list(v) for k, v in ctx.user.extra.items()}
        obj["status"] = {}
        return obj


@dataclass(frozen=True)
class CSRApprovalStrategy(GenericStrategy):
    """``certificatesigningrequests/NAME/approval``: only the conditions change."""

    def prepare_for_update(self, ctx: Context, new: JSONObject, old: JSONObject) -> JSONObject:
        def take_conditions(merged: JSONObject, sent: JSONObject) -> None:
            status = dict(merged.get("status") or {})
            status["conditions"] = _conditions(sent)
            if not status["conditions"]:
                status.pop("conditions")
            merged["status"] = status

        merged = object_meta.with_parts_of(new, old, take_conditions)
        _stamp_conditions(merged, old)
        return object_meta.prepare_for_update(merged, old, tracked=self.tracks_generation)

    def validate_update(self, ctx: Context, new: JSONObject, old: JSONObject) -> None:
        super().validate_update(ctx, new, old)
        _raise(new, _decision_errors(new, old, may_add=True))


@dataclass(frozen=True)
class CSRStatusStrategy(StatusStrategy):
    """``certificatesigningrequests/NAME/status``: the signer's route."""

    def prepare_for_update(self, ctx: Context, new: JSONObject, old: JSONObject) -> JSONObject:
        merged = super().prepare_for_update(ctx, new, old)
        _stamp_conditions(merged, old)
        return merged

    def validate_update(self, ctx: Context, new: JSONObject, old: JSONObject) -> None:
        super().validate_update(ctx, new, old)
        errs = _decision_errors(new, old, may_add=False)
        issued = str((old.get("status") or {}).get("certificate") or "")
        if issued and str((new.get("status") or {}).get("certificate") or "") != issued:
            errs.append(FieldError.forbidden(
                "status.certificate", "updates may not modify existing certificate content"))
        _raise(new, errs)


@dataclass(frozen=True)
class PDBStrategy(GenericStrategy):
    """A PodDisruptionBudget: created without a status."""

    def prepare_for_create(self, ctx: Context, obj: JSONObject) -> JSONObject:
        obj = super().prepare_for_create(ctx, obj)
        # the counts are not omitempty: an unobserved budget shows them as 0
        obj["status"] = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0,
                         "expectedPods": 0}  # fmt: skip
        return obj
