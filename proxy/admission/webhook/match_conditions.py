"""A webhook's ``matchConditions``: CEL expressions over ``object``, ``oldObject``,
``request`` (and ``authorizer``) that must all be true for the hook to be called.

They are evaluated with the shared CEL engine (``proxy.cel``) when this server has
it; without it, a hook with matchConditions fails per its ``failurePolicy`` (never
silently called or skipped).
"""

from __future__ import annotations

from typing import Any

from proxy.admission.attributes import Attributes
from proxy.admission.webhook.review import CallFailed

__all__ = ["hold"]

JSON = dict[str, Any]


async def hold(spec: JSON, attrs: Attributes) -> bool:
    """Whether every match condition of ``spec`` is true. ``CallFailed`` when one
    cannot be evaluated (upstream: an error, handled by failurePolicy)."""
    conditions = spec.get("matchConditions") or ()
    if not conditions:
        return True
    raise CallFailed("failed to evaluate match conditions: CEL is not available on this server")
