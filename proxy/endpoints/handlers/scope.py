"""``RequestScope``: what the handlers of one route (a resource, or one of its
subresources) work with, as upstream's ``endpoints/handlers.RequestScope`` that the
installer builds per route.

``resource`` is the resource of the URL (admission and the field manager see it),
``kind`` what the route's bodies and answers carry (the resource's own kind, or a
subresource's: ``autoscaling/v1 Scale``, ``v1 Binding``), ``store`` the resource's
generic store with the route's strategy, ``storage`` what serves the route: the store
itself or a subresource's own REST storage. Handlers call ``storage`` only through the
``proxy.registry.rest`` protocols it implements; none names a resource. The server's
part (the admission chain, the request body limit, the unsafe-delete gate) is the same
for every route and filled in by the generic handlers, so the object handlers need
nothing else (no ``request.app`` lookup).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from aiohttp import web

from proxy.admission.chain import AdmissionChain
from proxy.registry.resources import ResourceInfo
from proxy.registry.rest import ResetFields, SubresourceStorage, is_subresource_storage
from proxy.registry.store import Store
from proxy.request.request_info import RequestInfo
from storage.interfaces import JSONObject

__all__ = ["RequestCheck", "RequestScope", "ResourceDelegate"]

# a route's own checks of a request, before its verb's handler runs (a custom
# resource's: its deprecation warning, the patch types it takes, a terminating CRD)
RequestCheck = Callable[[web.Request, RequestInfo], None]


@dataclass(frozen=True)
class RequestScope:
    resource: ResourceInfo
    subresource: str
    store: Store
    storage: Store | SubresourceStorage
    check: RequestCheck | None = None
    # the server's, filled in by the generic handlers for every route (``with_server``)
    admission: AdmissionChain | None = None
    max_request_body_bytes: int = 0
    unsafe_delete_gate: bool = False  # AllowUnsafeMalformedObjectDeletion

    @property
    def kind(self) -> ResourceInfo:
        storage = self.storage
        return storage.kind if is_subresource_storage(storage) else self.resource

    @property
    def schema_required(self) -> bool:
        """Whether field validation checks the schema's required fields of the route's
        kind: not where the kind's own validation words those errors (a subresource's
        own kind, a Scale, has none here)."""
        if is_subresource_storage(self.storage):
            return True
        return not self.store.strategy.checks_required_fields()

    @property
    def schema_types(self) -> bool:
        """Whether field validation checks the JSON types of the route's kind: not where
        the kind's validation reports them with its other errors (a custom resource:
        a type error there comes with the "rules were not checked" cause)."""
        if is_subresource_storage(self.storage):
            return True
        return not self.store.strategy.checks_types()

    @property
    def reset_fields(self) -> ResetFields:
        """What the route's writes do not own (its strategy's reset fields): the field
        manager leaves them out."""
        return self.store.strategy.reset_fields()

    def default(self, obj: JSONObject) -> JSONObject:
        """``obj`` (decoded as the route's kind) with the kind's defaults set in place,
        as upstream's decoder defaults every body and patch result before admission. A
        subresource's own kind (a Scale, a Binding) has none here."""
        if not is_subresource_storage(self.storage):
            self.store.strategy.default(obj)
        return obj

    @property
    def qualified(self) -> str:
        """``pods/binding``: the route as errors name it."""
        if not self.subresource:
            return self.resource.plural
        return f"{self.resource.plural}/{self.subresource}"


class ResourceDelegate(Protocol):
    """A server the generic handlers serve some resources for, with its own strategies
    and storages (upstream's delegation chain: kube's API → apiextensions → not found;
    ``proxy.apiextensions``' custom resources). The generic handlers ask each delegate
    for the scope of a resolved resource; one that is not its answers None."""

    def scope(self, resource: ResourceInfo, subresource: str) -> RequestScope | None: ...
