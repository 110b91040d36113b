"""kubectl's column handlers of kube's built-in kinds
(``pkg/printers/internalversion/printers.go``), one module per API group, each
exporting ``HANDLERS`` (plural -> handler); the Table machinery they plug into is the
generic ``proxy.printers``. The composition root registers them
(:func:`register_builtin_printers`)."""

from __future__ import annotations

from collections.abc import Mapping

from proxy.kube.printers import (
    apps,
    batch,
    certificates,
    coordination,
    core,
    discovery,
    networking,
    policy,
    rbac,
)
from proxy.printers.columns import TablePrinter
from proxy.printers.handlers import register_printers

__all__ = ["BUILTIN_PRINTERS", "register_builtin_printers"]

# API group -> its handlers by plural
BUILTIN_PRINTERS: Mapping[str, Mapping[str, TablePrinter]] = {
    "": core.HANDLERS,
    "apps": apps.HANDLERS,
    "batch": batch.HANDLERS,
    "certificates.k8s.io": certificates.HANDLERS,
    "coordination.k8s.io": coordination.HANDLERS,
    "discovery.k8s.io": discovery.HANDLERS,
    "networking.k8s.io": networking.HANDLERS,
    "policy": policy.HANDLERS,
    "rbac.authorization.k8s.io": rbac.HANDLERS,
}


def register_builtin_printers() -> None:
    """Give every built-in kind its kubectl columns (idempotent)."""
    for group, handlers in BUILTIN_PRINTERS.items():
        register_printers(group, handlers)
