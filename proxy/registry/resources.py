"""The resource registry's vocabulary: a served resource (``ResourceInfo``, the facts
discovery and the handlers need) and the ``Registry`` of those a server serves.

Which resources those are is not the generic library's to say: kube's built-in ones
are declared in ``proxy.kube.resources`` (over the kinds ``proxy.registry.catalogue``
knows), the CRD's and APIService's by their servers, and the composition root
(``proxy.app``) puts them in one Registry; custom resources come and go at run time.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from proxy.apimachinery.api_resource import SubresourceInfo
from proxy.openapi import schemas
from proxy.openapi.schemas import SchemaNode
from proxy.registry.kind_schema import KindSchema

__all__ = ["Registry", "ResourceInfo"]


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """One served resource (or a catalogue entry): the facts discovery and the
    handlers need. ``verbs`` are API verbs (create, get, list, ...), sorted."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    verbs: tuple[str, ...]
    subresources: tuple[str, ...] = ()
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    create_on_update: bool = False
    # False for a resource without storage of its own (upstream's review APIs and
    # virtual REST storages: bindings, componentstatuses): no etcd keys, no watch cache
    has_storage: bool = True
    singular_name: str = ""  # a CRD's names.singular; built-ins: the kind in lower case
    # a custom kind's schema, apply type and columns (its served version's); None for a
    # built-in kind, whose come from the built-in OpenAPI and printers. Not part of the
    # resource's identity (equality, hashing): the same resource with a changed schema.
    kind_schema: KindSchema | None = field(default=None, compare=False, repr=False)
    # what discovery says of each subresource, as its server declares it (none listed:
    # the parent's kind; get, patch, update)
    subresource_facts: tuple[tuple[str, SubresourceInfo], ...] = field(
        default=(), compare=False, repr=False
    )

    @property
    def singular(self) -> str:
        return self.singular_name or self.kind.lower()

    @property
    def api_version(self) -> str:
        """``v1`` for the core group, ``apps/v1`` otherwise."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def qualified(self) -> str:
        """The GroupResource string errors use: ``pods``, ``deployments.apps``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def group_kind(self) -> str:
        """The GroupKind string Invalid errors use: ``Pod``, ``Deployment.apps``."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    def allows(self, verb: str) -> bool:
        return verb in self.verbs

    def subresource_info(self, name: str) -> SubresourceInfo:
        return next((info for sub, info in self.subresource_facts if sub == name),
                    SubresourceInfo())  # fmt: skip

    def request_schema(self) -> SchemaNode | None:
        """The schema request bodies and patches are checked against: a custom kind's
        served version's, else the built-in kind's (None when unknown)."""
        if self.kind_schema is not None:
            return self.kind_schema.request
        return schemas.kind_schema(self.group, self.version, self.kind)


@dataclass
class Registry:
    """The served resources, looked up by (group, version, plural).

    ``groups`` keeps discovery order: the core group first, then groups in the order
    they were added in; each group's versions in order of appearance.
    """

    resources: dict[tuple[str, str, str], ResourceInfo] = field(default_factory=dict)

    def add(self, info: ResourceInfo) -> None:
        self.resources[(info.group, info.version, info.plural)] = info

    def remove(self, group: str, version: str, plural: str) -> None:
        """Stop serving a resource added at run time (a custom resource's version)."""
        self.resources.pop((group, version, plural), None)

    def get(self, group: str, version: str, plural: str) -> ResourceInfo | None:
        return self.resources.get((group, version, plural))

    def lookup(self, group: str, plural: str) -> ResourceInfo | None:
        """The first served version of ``plural`` in ``group`` (for cross-resource checks)."""
        for (g, _, p), info in self.resources.items():
            if g == group and p == plural:
                return info
        return None

    def versions(self, group: str) -> list[str]:
        seen: list[str] = []
        for g, v, _ in self.resources:
            if g == group and v not in seen:
                seen.append(v)
        return seen

    def groups(self) -> list[str]:
        """Named groups (the core group "" excluded), in served order."""
        seen: list[str] = []
        for g, _, _ in self.resources:
            if g and g not in seen:
                seen.append(g)
        return seen

    def in_group_version(self, group: str, version: str) -> list[ResourceInfo]:
        return [r for (g, v, _), r in self.resources.items() if g == group and v == version]

    def __iter__(self) -> Iterator[ResourceInfo]:
        return iter(self.resources.values())
