"""What a custom resource request gets beyond the built-in handlers (apiextensions-
apiserver's ``crdHandler.ServeHTTP`` and ``serveResource``), run by ``handle_resource``
after the request resolved to a CR version (``check_custom``), and the storage of its
``scale`` subresource (``subresource_storage``):

- a deprecated version adds its ``Warning`` (``299 - "<group>/<version> <Kind> is
  deprecated; use <group>/<storage> <Kind>"`` or the CRD's ``deprecationWarning``) to
  whatever response the request gets;
- a strategic merge patch is refused with 415, naming the patch types CRs take;
- a create while the CRD is terminating is refused with 405 ``create not allowed while
  custom resource definition is terminating``;
- ``/scale`` (``proxy.registry.scale.ScaleREST``) reads and writes the CRD's
  ``specReplicasPath``/``statusReplicasPath``/``labelSelectorPath``.

Protobuf is refused by the negotiation (no protobuf schema for custom kinds: 406 for
an Accept of protobuf only, 415 for a protobuf body), as upstream serves CRs in JSON
and YAML only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from proxy import apierrors
from proxy.apiextensions import custom_resource as cr_mod
from proxy.apiextensions.custom_resource import CustomResourceVersion
from proxy.endpoints import negotiation
from proxy.endpoints.handlers.scope import RequestScope
from proxy.registry.resources import ResourceInfo
from proxy.registry.rest import SubresourceStorage
from proxy.registry.scale import ScaleREST
from proxy.registry.storage_factory import StorageMap
from proxy.registry.store import Store
from proxy.registry.strategy import GenericStrategy, StatusStrategy
from proxy.registry.validation.strategy import KindStrategy
from proxy.request.request_info import RequestInfo
from proxy.request.warning import warning_header
from storage.interfaces import JSONObject

__all__ = [
    "CR_PATCH_TYPES",
    "CustomResourceDelegate",
    "check_custom",
    "install_warnings",
    "subresource_storage",
]

CR_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)
_WARNINGS = web.RequestKey("watchcache_cr_warnings", list)


async def _add_warnings(request: web.Request, response: web.StreamResponse) -> None:
    for text in request.get(_WARNINGS, ()):
        response.headers.add("Warning", warning_header(text))


def install_warnings(app: web.Application) -> None:
    """Send the warnings ``handle_custom`` records with the request's response."""
    app.on_response_prepare.append(_add_warnings)


@dataclass(frozen=True)
class _ScalePaths:
    """Where a custom resource keeps its scale (a CRD version's ``subresources.scale``:
    ``specReplicasPath``, ``statusReplicasPath``, ``labelSelectorPath``)."""

    spec_path: str
    status_path: str
    selector_path: str

    def read(self, obj: JSONObject) -> tuple[Any, Any, str]:
        selector = None
        if self.selector_path:
            selector = cr_mod.jsonpath_get(obj, self.selector_path)[0]
        return (
            cr_mod.jsonpath_get(obj, self.spec_path)[0],
            cr_mod.jsonpath_get(obj, self.status_path)[0],
            selector if isinstance(selector, str) else "",
        )

    def write_replicas(self, obj: JSONObject, replicas: int) -> None:
        cr_mod.jsonpath_set(obj, self.spec_path, replicas)


def _scale_paths(spec: Any) -> _ScalePaths:
    return _ScalePaths(
        str(spec.get("specReplicasPath") or ".spec.replicas"),
        str(spec.get("statusReplicasPath") or ".status.replicas"),
        str(spec.get("labelSelectorPath") or ""),
    )


def subresource_storage(
    cr: CustomResourceVersion, subresource: str, store: Store
) -> SubresourceStorage | None:
    """The storage of a custom resource's ``scale``; None for ``status`` (the
    resource's store serves it)."""
    if subresource == "scale" and cr.scale is not None:
        return ScaleREST(store, _scale_paths(cr.scale))
    return None


@dataclass(frozen=True)
class CustomResourceDelegate:
    """The apiextensions server behind the generic handlers (upstream's delegation
    chain: kube's API → apiextensions → not found): the scope of a served custom
    resource version, with the generic strategy and the CR's validation (its versions'
    schemas, from the CRD's serving object), its ``scale`` storage, and its own request
    checks (``check_custom``)."""

    version_of: Callable[[ResourceInfo], CustomResourceVersion | None]
    rules_of: Callable[[ResourceInfo], KindStrategy | None]
    storages: StorageMap
    lifecycle: bool

    def _store(self, resource: ResourceInfo, subresource: str) -> Store:
        kind = StatusStrategy if subresource == "status" else GenericStrategy
        strategy = kind(resource, subresource, self.rules_of(resource))
        return Store(self.storages.for_resource(resource), strategy, lifecycle=self.lifecycle)

    def scope(self, resource: ResourceInfo, subresource: str) -> RequestScope | None:
        cr = self.version_of(resource)
        if cr is None:
            return None
        store = self._store(resource, subresource)
        own = None
        if subresource:
            own = subresource_storage(cr, subresource, self._store(resource, ""))

        def check(request: web.Request, info: RequestInfo) -> None:
            check_custom(request, info, cr)

        storage = own if own is not None else store
        return RequestScope(resource, subresource, store, storage, check)


def check_custom(request: web.Request, info: RequestInfo, cr: CustomResourceVersion) -> None:
    """The checks of a CR request before the generic handlers serve it."""
    warning = cr.warning()
    if warning:
        request[_WARNINGS] = [warning]
    if info.verb == "patch":
        patch_type = negotiation.media_type_of(request, default="")
        if patch_type == "application/strategic-merge-patch+json":
            raise apierrors.unsupported_media_type(patch_type, CR_PATCH_TYPES)
    if info.verb == "create" and cr.terminating:
        body = apierrors.status_body(
            405, "MethodNotAllowed",
            "create not allowed while custom resource definition is terminating",
            {"group": cr.group, "kind": cr.plural},
        )  # fmt: skip
        raise apierrors.StatusError(body)
