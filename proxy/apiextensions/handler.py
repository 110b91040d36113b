"""What a custom resource request gets beyond the built-in handlers (apiextensions-
apiserver's ``crdHandler.ServeHTTP`` and ``serveResource``), run by ``handle_resource``
after the request resolved to a CR version:

- a deprecated version adds its ``Warning`` (``299 - "<group>/<version> <Kind> is
  deprecated; use <group>/<storage> <Kind>"`` or the CRD's ``deprecationWarning``) to
  whatever response the request gets;
- a strategic merge patch is refused with 415, naming the patch types CRs take;
- a create while the CRD is terminating is refused with 405 ``create not allowed while
  custom resource definition is terminating``;
- ``/scale`` reads and writes the CRD's ``specReplicasPath``/``statusReplicasPath``/
  ``labelSelectorPath``.

Protobuf is refused by the negotiation (no protobuf schema for custom kinds: 406 for
an Accept of protobuf only, 415 for a protobuf body), as upstream serves CRs in JSON
and YAML only.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from proxy import apierrors
from proxy.apiextensions import custom_resource as cr_mod
from proxy.apiextensions.custom_resource import CustomResourceVersion
from proxy.endpoints import negotiation
from proxy.registry import scale
from proxy.registry.resources import ResourceInfo
from proxy.registry.store import Store
from proxy.request.request_info import RequestInfo
from proxy.request.warning import warning_header
from proxy.server.context import APIContext

__all__ = ["CR_PATCH_TYPES", "custom_version", "handle_custom", "install_warnings"]

CR_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)
_WARNINGS = web.RequestKey("watchcache_cr_warnings", list)


def custom_version(ctx: APIContext, resource: ResourceInfo) -> CustomResourceVersion | None:
    """The CRD version behind ``resource``, None for a built-in one."""
    serving = ctx.custom_resources
    return None if serving is None else serving.version_of(resource)


async def _add_warnings(request: web.Request, response: web.StreamResponse) -> None:
    for text in request.get(_WARNINGS, ()):
        response.headers.add("Warning", warning_header(text))


def install_warnings(app: web.Application) -> None:
    """Send the warnings ``handle_custom`` records with the request's response."""
    app.on_response_prepare.append(_add_warnings)


def _scale_paths(spec: Any) -> scale.ScalePaths:
    spec_path = str(spec.get("specReplicasPath") or ".spec.replicas")
    status_path = str(spec.get("statusReplicasPath") or ".status.replicas")
    selector_path = spec.get("labelSelectorPath")

    def read(obj: Any) -> tuple[Any, Any, Any]:
        selector = cr_mod.jsonpath_get(obj, str(selector_path))[0] if selector_path else None
        return (
            cr_mod.jsonpath_get(obj, spec_path)[0],
            cr_mod.jsonpath_get(obj, status_path)[0],
            selector,
        )

    def write(obj: Any, replicas: int) -> None:
        cr_mod.jsonpath_set(obj, spec_path, replicas)

    return scale.ScalePaths(read, write)


async def handle_custom(
    request: web.Request,
    ctx: APIContext,
    info: RequestInfo,
    store: Store,
    cr: CustomResourceVersion,
) -> web.StreamResponse | None:
    """Checks and subresources of a CR request; None: the built-in handler serves it."""
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
    if info.subresource == "scale" and cr.scale is not None:
        return await scale.handle_scale(request, ctx, info, store, _scale_paths(cr.scale))
    return None
