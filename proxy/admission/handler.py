"""Where the REST handlers call admission (kube's ``endpoints/handlers``): one
``Attributes`` per write, the mutating phase before the strategy's validation, the
validating phase after it, both inside the update's retry loop for UPDATE/PATCH as
upstream. Also the response hook that turns admission warnings into ``Warning``
headers (on successes and rejections alike).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web

from proxy.admission.attributes import CREATE, DELETE, UPDATE, WARNINGS_KEY, Attributes
from proxy.admission.chain import AdmissionChain
from proxy.request.user import request_user
from proxy.request.warning import warning_header

if TYPE_CHECKING:
    from proxy.registry.resources import ResourceInfo

__all__ = [
    "RequestAdmission",
    "attributes",
    "on_response_prepare",
    "options_object",
]

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


async def on_response_prepare(request: web.Request, response: web.StreamResponse) -> None:
    """``app.on_response_prepare`` hook: one ``Warning`` header per admission warning."""
    for text in request.get(WARNINGS_KEY) or ():
        response.headers.add("Warning", warning_header(text))


@dataclass(frozen=True)
class RequestAdmission:
    """Admission of one write request, as upstream's handlers split it: the mutating
    phase runs in the handler (``admit_create``/``admit_update``), the validating phase
    is handed to the registry store as its ``create_validation``/``update_validation``
    (upstream's ``rest.AdmissionToValidateObjectFunc``), which calls it on the object
    the strategy prepared. Creates take CreateOptions, whatever the request's verb (as
    upstream's handlers turn update and patch options into for a create)."""

    request: web.Request
    chain: AdmissionChain | None
    resource: ResourceInfo
    namespace: str
    name: str
    subresource: str
    dry_run: bool
    options_kind: str  # of the updates and deletes: UpdateOptions, PatchOptions, DeleteOptions
    # (group, version, kind) of a subresource's objects (an autoscaling/v1 Scale)
    kind: tuple[str, str, str] | None = None

    def _attributes(self, operation: str, obj: JSON, old: JSON | None = None) -> Attributes:
        creating = operation == CREATE
        name = str((obj.get("metadata") or {}).get("name") or "") if creating else self.name
        attrs = attributes(
            self.request, self.resource, operation, self.namespace, name, obj=obj, old=old,
            subresource=self.subresource, dry_run=self.dry_run,
            options_kind="CreateOptions" if creating else self.options_kind,
        )  # fmt: skip
        attrs.kind_override = self.kind
        return attrs

    async def admit_create(self, obj: JSON) -> JSON:
        """The mutating phase of a create: the object admission made of ``obj``."""
        attrs = self._attributes(CREATE, obj)
        if self.chain is not None:
            await self.chain.admit(attrs)
        return attrs.object or obj

    async def admit_update(self, obj: JSON, old: JSON) -> JSON:
        attrs = self._attributes(UPDATE, obj, old)
        if self.chain is not None:
            await self.chain.admit(attrs)
        return attrs.object or obj

    def _delete_attributes(self, old: JSON | None) -> Attributes:
        return attributes(
            self.request, self.resource, DELETE, self.namespace, self.name, old=old,
            subresource=self.subresource, dry_run=self.dry_run, options_kind=self.options_kind,
        )  # fmt: skip

    async def admit_delete(self) -> None:
        """The mutating phase of a delete: no objects."""
        if self.chain is not None:
            await self.chain.admit(self._delete_attributes(None))

    async def validate_delete(self, old: JSON | None) -> None:
        """The validating phase of a delete, with the object being deleted as
        ``oldObject`` (None: the unsafe delete of a value that cannot be decoded)."""
        if self.chain is not None:
            await self.chain.validate(self._delete_attributes(old))

    async def validate_create(self, obj: JSON) -> None:
        if self.chain is not None:
            await self.chain.validate(self._attributes(CREATE, obj))

    async def validate_update(self, obj: JSON, old: JSON) -> None:
        if self.chain is not None:
            await self.chain.validate(self._attributes(UPDATE, obj, old))
