"""``admission.Attributes``: what one admission call sees (k8s.io/apiserver/pkg/admission).

One ``Attributes`` is built per write by the handlers (``proxy.admission.handler``) and
passed through the whole chain. Mutating plugins change ``object`` in place (or replace
it); validating plugins only read it. Warnings and audit annotations a plugin adds are
kept on the aiohttp request under ``WARNINGS_KEY`` and ``AUDIT_ANNOTATIONS_KEY``, so
that the response hook (Warning headers) and the audit trail (read by the audit
package through ``audit_annotations``) see them even when admission rejects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from proxy.registry.resources import ResourceInfo
from proxy.request import audit_context
from proxy.request.user import UserInfo

__all__ = [
    "AUDIT_ANNOTATIONS_KEY",
    "CONNECT",
    "CREATE",
    "DELETE",
    "UPDATE",
    "WARNINGS_KEY",
    "Attributes",
    "add_audit_annotation",
    "add_warning",
    "audit_annotations",
    "request_warnings",
]

JSON = dict[str, Any]

CREATE = "CREATE"
UPDATE = "UPDATE"
DELETE = "DELETE"
CONNECT = "CONNECT"

# key -> value; written by admission (plugins, webhooks, policies), read by audit
# the audit trail's own annotations (proxy.request.audit_context): admission adds to the same dict
AUDIT_ANNOTATIONS_KEY = audit_context.AUDIT_ANNOTATIONS
# Warning texts in order, without duplicates; sent as ``Warning: 299 - "..."`` headers
WARNINGS_KEY = web.RequestKey("watchcache_admission_warnings", list[str])


def add_audit_annotation(request: web.Request | None, key: str, value: str) -> None:
    """Record an audit annotation for ``request`` (kube's ``AddAnnotation``: the first
    value of a key wins, a different later value is ignored)."""
    if request is not None:
        audit_context.add_audit_annotation(request, key, value)


def audit_annotations(request: web.Request) -> dict[str, str]:
    """The audit annotations admission recorded for ``request`` (empty when none)."""
    return dict(request.get(AUDIT_ANNOTATIONS_KEY) or {})


def add_warning(request: web.Request | None, text: str) -> None:
    """Add one Warning for the response (deduplicated, as kube's warning recorder)."""
    if request is None or not text:
        return
    warnings = request.get(WARNINGS_KEY)
    if warnings is None:
        warnings = []
        request[WARNINGS_KEY] = warnings
    if text not in warnings:
        warnings.append(text)


def request_warnings(request: web.Request) -> list[str]:
    return list(request.get(WARNINGS_KEY) or [])


@dataclass
class Attributes:
    """One admission request. ``object`` is None for DELETE and CONNECT; ``old_object``
    is None for CREATE and CONNECT. ``options`` is the CreateOptions / UpdateOptions /
    PatchOptions / DeleteOptions object of the request (kind and apiVersion set)."""

    resource: ResourceInfo
    operation: str
    namespace: str
    name: str
    subresource: str = ""
    object: JSON | None = None
    old_object: JSON | None = None
    options: JSON = field(default_factory=dict)
    dry_run: bool = False
    user: UserInfo | None = None
    request: web.Request | None = None
    # the served kind of a subresource differs (pods/binding is a Binding, .../scale a Scale)
    kind_override: tuple[str, str, str] | None = None

    @property
    def kind(self) -> tuple[str, str, str]:
        """(group, version, kind) of ``object``."""
        if self.kind_override is not None:
            return self.kind_override
        return (self.resource.group, self.resource.version, self.resource.kind)

    @property
    def gvr(self) -> tuple[str, str, str]:
        return (self.resource.group, self.resource.version, self.resource.plural)

    def add_warning(self, text: str) -> None:
        add_warning(self.request, text)

    def add_annotation(self, key: str, value: str) -> None:
        add_audit_annotation(self.request, key, value)
