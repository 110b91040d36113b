"""The DefaultTolerationSeconds admission plugin: a created pod that does not already
tolerate them gets tolerations of the ``node.kubernetes.io/not-ready`` and
``node.kubernetes.io/unreachable`` NoExecute taints for 300 seconds (kube-apiserver's
``--default-not-ready-toleration-seconds`` / ``--default-unreachable-toleration-
seconds`` defaults)."""

from __future__ import annotations

from typing import Any

from proxy.admission.attributes import CREATE, Attributes
from proxy.admission.interfaces import Plugin
from proxy.kube.admission.pods import is_pod

__all__ = ["DEFAULT_SECONDS", "DefaultTolerationSeconds"]

JSON = dict[str, Any]
DEFAULT_SECONDS = 300
TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def _tolerates(tolerations: list[JSON], key: str) -> bool:
    for t in tolerations:
        key_ok = t.get("key") == key or (not t.get("key") and t.get("operator") == "Exists")
        if key_ok and t.get("effect") in (None, "", "NoExecute"):
            return True
    return False


class DefaultTolerationSeconds(Plugin):
    name = "DefaultTolerationSeconds"
    operations = frozenset({CREATE})
    mutating = True

    async def admit(self, attrs: Attributes) -> None:
        if not is_pod(attrs) or attrs.subresource or attrs.object is None:
            return
        spec = attrs.object.setdefault("spec", {})
        tolerations: list[JSON] = spec.get("tolerations") or []
        added = [{"key": key, "operator": "Exists", "effect": "NoExecute",
                  "tolerationSeconds": DEFAULT_SECONDS}
                 for key in TAINTS if not _tolerates(tolerations, key)]
        if added:
            spec["tolerations"] = tolerations + added
