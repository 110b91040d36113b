"""A served resource for the pure modules' unit tests (fits proxy.apimachinery.api_resource's
Protocols, as the registry's ResourceInfo does)."""

from __future__ import annotations

from dataclasses import dataclass

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class Res:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: tuple[str, ...] = ()
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
