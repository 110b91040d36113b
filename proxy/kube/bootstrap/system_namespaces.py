"""The system namespaces every cluster has, created at start-up as kube-apiserver's
system-namespaces controller does: ``default``, ``kube-system``, ``kube-public`` and
``kube-node-lease``. kubectl's kubeconfig context defaults to ``default``, so ``kubectl
run``/``create``/``apply`` without ``-n`` work on a fresh server.

The post-start hook ``start-system-namespaces-controller`` creates each through the
loopback client (an existing one is left as it is); a failure (etcd down at start-up)
ends the run and its supervisor runs it again, so the namespaces appear once etcd is
back; ``/readyz``'s ``poststarthook/start-system-namespaces-controller`` passes once
they all exist.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from proxy.loopback.client import resource_path

if TYPE_CHECKING:
    from proxy.server.post_start_hooks import PostStartHookContext

__all__ = ["SYSTEM_NAMESPACES", "SYSTEM_NAMESPACES_HOOK", "ensure_system_namespaces"]

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
SYSTEM_NAMESPACES_HOOK = "start-system-namespaces-controller"


async def ensure_system_namespaces(hook: PostStartHookContext) -> None:
    """Create the missing system namespaces."""
    namespaces = resource_path("", "v1", "namespaces")
    for name in SYSTEM_NAMESPACES:
        obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        await hook.loopback.create_if_absent(namespaces, obj)
