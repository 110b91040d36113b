"""AlwaysAdmit and AlwaysDeny (kube's ``admit`` and ``deny`` plugins, default off)."""

from __future__ import annotations

from proxy import apierrors
from proxy.admission.attributes import Attributes
from proxy.admission.interfaces import Plugin

__all__ = ["AlwaysAdmit", "AlwaysDeny"]


class AlwaysAdmit(Plugin):
    name = "AlwaysAdmit"
    mutating = True
    validating = True


class AlwaysDeny(Plugin):
    """Rejects every write: 403 ``... is forbidden: admission control is denying all
    modifications``."""

    name = "AlwaysDeny"
    mutating = True
    validating = True

    async def admit(self, attrs: Attributes) -> None:
        raise forbidden(attrs, "admission control is denying all modifications")

    async def validate(self, attrs: Attributes) -> None:
        raise forbidden(attrs, "admission control is denying all modifications")


def forbidden(attrs: Attributes, reason: str) -> apierrors.StatusError:
    """kube's ``admission.NewForbidden``: on the resource (with its subresource)."""
    qualified = attrs.resource.qualified
    if attrs.subresource:
        res, _, group = qualified.partition(".")
        qualified = f"{res}/{attrs.subresource}" + (f".{group}" if group else "")
    return apierrors.forbidden(qualified, attrs.name, reason)
