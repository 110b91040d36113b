"""Where the REST handlers call admission (kube's ``endpoints/handlers``): one
``Attributes`` per write, the mutating phase before the strategy's validation, the
validating phase after it, both inside the update's retry loop for UPDATE/PATCH as
upstream. Also the response hook that turns admission warnings into ``Warning``
headers (on successes and rejections alike).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aiohttp import web

from proxy.admission.attributes import WARNINGS_KEY, Attributes
from proxy.admission.chain import AdmissionChain
from proxy.request.user import request_user
from proxy.request.warning import warning_header

if TYPE_CHECKING:
    from proxy.registry.resources import ResourceInfo
    from proxy.server.context import APIContext

__all__ = ["admit", "attributes", "on_response_prepare", "options_object", "validate"]

JSON = dict[str, Any]

# query parameter -> option field, per options kind
_OPTION_FIELDS = {"fieldManager": "fieldManager", "fieldValidation": "fieldValidation",
                  "force": "force", "gracePeriodSeconds": "gracePeriodSeconds",
                  "propagationPolicy": "propagationPolicy"}


def options_object(kind: str, query: Mapping[str, str], dry_run: bool) -> JSON:
    """The request's options as the ``AdmissionRequest.options`` object."""
    out: JSON = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    if dry_run:
        out["dryRun"] = ["All"]
    for param, name in _OPTION_FIELDS.items():
        if param in query:
            value: Any = query[param]
            if param == "force":
                value = value == "true"
            elif param == "gracePeriodSeconds" and value.lstrip("-").isdigit():
                value = int(value)
            out[name] = value
    return out


def attributes(
    request: web.Request,
    resource: ResourceInfo,
    operation: str,
    namespace: str,
    name: str,
    *,
    obj: JSON | None = None,
    old: JSON | None = None,
    subresource: str = "",
    dry_run: bool = False,
    options_kind: str = "",
) -> Attributes:
    """The admission attributes of one request."""
    options = options_object(options_kind, request.query, dry_run) if options_kind else {}
    return Attributes(
        resource=resource, operation=operation, namespace=namespace, name=name,
        subresource=subresource, object=obj, old_object=old, options=options,
        dry_run=dry_run, user=request_user(request), request=request,
    )  # fmt: skip


def _chain(ctx: APIContext) -> AdmissionChain | None:
    chain = ctx.admission
    return chain if isinstance(chain, AdmissionChain) else None


async def admit(ctx: APIContext, attrs: Attributes) -> None:
    """The mutating phase (no-op when the server runs without admission)."""
    chain = _chain(ctx)
    if chain is not None:
        await chain.admit(attrs)


async def validate(ctx: APIContext, attrs: Attributes) -> None:
    """The validating phase."""
    chain = _chain(ctx)
    if chain is not None:
        await chain.validate(attrs)


async def on_response_prepare(request: web.Request, response: web.StreamResponse) -> None:
    """``app.on_response_prepare`` hook: one ``Warning`` header per admission warning."""
    for text in request.get(WARNINGS_KEY) or ():
        response.headers.add("Warning", warning_header(text))
