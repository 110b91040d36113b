"""Who controls whom: ownerReferences read the way controllers and the garbage
collector read them, and an index of dependents by their controller's uid."""

from __future__ import annotations

from lab.sim.client import JSON
from lab.sim.informer import Informer, key_of

__all__ = ["ControllerIndex", "controller_of", "owner_reference"]


def controller_of(obj: JSON, kind: str = "") -> JSON | None:
    """The ownerReference with ``controller: true`` (of ``kind`` when given)."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and (not kind or ref.get("kind") == kind):
            return dict(ref)
    return None


def owner_reference(owner: JSON) -> JSON:
    """A controller ownerReference to ``owner`` that blocks its foreground deletion."""
    meta = owner["metadata"]
    return {"apiVersion": owner.get("apiVersion", ""), "kind": owner.get("kind", ""),
            "name": meta["name"], "uid": meta["uid"], "controller": True,
            "blockOwnerDeletion": True}  # fmt: skip


class ControllerIndex:
    """Keys of ``informer``'s objects by the uid of their ``kind`` controller, kept
    current from the informer's events."""

    def __init__(self, informer: Informer, kind: str) -> None:
        self.kind = kind
        self.informer = informer
        self._by_owner: dict[str, set[str]] = {}
        informer.add_handler(self._on_event)

    def _on_event(self, event: str, obj: JSON, old: JSON | None) -> None:
        key = key_of(obj)
        before = controller_of(old, self.kind) if old else None
        if before:
            self._by_owner.get(str(before["uid"]), set()).discard(key)
        now = controller_of(obj, self.kind)
        if now and event != "DELETED":
            self._by_owner.setdefault(str(now["uid"]), set()).add(key)
        elif now:
            self._by_owner.get(str(now["uid"]), set()).discard(key)

    def dependents(self, uid: str) -> list[JSON]:
        out = []
        for key in list(self._by_owner.get(uid, ())):
            obj = self.informer.get(key)
            if obj is not None:
                out.append(obj)
        return out
