"""What the pure modules (tables, OpenAPI, aggregated discovery) need to know of a served
resource (metav1's ``APIResource``), as structural Protocols: the registry's
``ResourceInfo`` fits each, and unit tests pass small dataclasses. One place, below
them all, so the three modules agree on the names."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["DiscoveredResource", "NamedResource", "ServedResource", "SubresourceInfo"]

# the verbs of a subresource that declares none (status: get, patch, update)
DEFAULT_SUBRESOURCE_VERBS = ("get", "patch", "update")


@dataclass(frozen=True)
class SubresourceInfo:
    """What discovery says of one subresource, declared by whoever serves it (upstream
    reads it from the subresource's storage: the kind its ``New()`` returns, its
    ``GroupVersionKindProvider``, and the verbs its REST interfaces implement)."""

    kind: tuple[str, str, str] | None = None  # (group, version, kind); None: the parent's
    verbs: tuple[str, ...] = DEFAULT_SUBRESOURCE_VERBS


class NamedResource(Protocol):
    """Group, version, kind and plural name: enough to print a Table."""

    @property
    def group(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def plural(self) -> str: ...


class ServedResource(NamedResource, Protocol):
    """A resource with its scope, verbs and subresources: enough for OpenAPI paths."""

    @property
    def namespaced(self) -> bool: ...
    @property
    def verbs(self) -> Sequence[str]: ...
    @property
    def subresources(self) -> Sequence[str]: ...


class DiscoveredResource(ServedResource, Protocol):
    """A served resource with its short names and categories: a discovery entry."""

    @property
    def short_names(self) -> Sequence[str]: ...
    @property
    def categories(self) -> Sequence[str]: ...
    def subresource_info(self, name: str) -> SubresourceInfo: ...
