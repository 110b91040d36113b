"""RequestInfo: what an HTTP request asks of the API, computed once per request by the
request-info filter (``proxy.server.filters``) and read by everything after it, after
kube-apiserver's ``RequestInfoFactory.NewRequestInfo``
(``k8s.io/apiserver/pkg/endpoints/request/requestinfo.go``).

Resource paths::

    /api/v1/<resource>[/<name>[/<subresource>[/...]]]
    /api/v1/namespaces/<ns>/<resource>[/<name>[/<subresource>[/...]]]
    /apis/<group>/<version>/...                      (same shapes)
    /api/v1/watch/...                                (deprecated watch prefix)
    /api/v1/proxy/...                                (deprecated proxy prefix)

``namespaces/<ns>/status`` and ``namespaces/<ns>/finalize`` are the namespace's own
subresources, not a resource called "status" inside it. Anything else (``/api``,
``/apis/apps``, ``/healthz``) is a non-resource request whose verb is the lower-case
HTTP method.

Verbs: GET/HEAD → get, or list | watch without a name; POST → create; PUT → update;
PATCH → patch; DELETE → delete, or deletecollection without a name. ``watch`` is a
boolean query parameter read as upstream's query conversion reads every boolean
(``query_bool``): absent is false, ``0`` and ``false`` in any case are false, anything
else (``1``, ``t``, ``True``, ``yes``, even an empty value) is true. A list whose field
selector requires ``metadata.name=<n>`` names ``<n>`` (so its metrics scope is
``resource``, as upstream's); the name in the URL itself is ``path_name``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aiohttp import web

from storage.selectors import SelectorError, parse_field_selector, parse_label_selector

__all__ = ["REQUEST_INFO", "RequestInfo", "parse_request_info", "query_bool", "request_info_of"]

_API_PREFIXES = frozenset({"api", "apis"})
_GROUPLESS_PREFIXES = frozenset({"api"})
_SPECIAL_VERBS = frozenset({"proxy", "watch"})
_SPECIAL_VERBS_NO_SUBRESOURCES = frozenset({"proxy"})
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_VERBS_WITH_SELECTORS = frozenset({"list", "watch", "deletecollection"})
_METHOD_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """One request's API coordinates (upstream's ``request.RequestInfo``).

    ``parts`` starts at the resource: ``(resource, name, subresource, ...)``.
    ``field_selector``/``label_selector`` are the raw query values, kept only for the
    verbs that honour selectors (list, watch, deletecollection) and not for the
    deprecated ``/watch/`` prefix, as upstream's ``AuthorizeWithSelectors`` does."""

    is_resource_request: bool
    path: str
    verb: str  # API verb for resource requests, else the lower-case HTTP method
    api_prefix: str = ""  # "api" or "apis"
    group: str = ""
    version: str = ""
    namespace: str = ""
    resource: str = ""
    name: str = ""
    subresource: str = ""
    parts: tuple[str, ...] = ()
    field_selector: str = ""
    label_selector: str = ""
    verb_via_path: bool = False  # /api/v1/watch/... or /api/v1/proxy/...
    # the resource path stands under ``namespaces/<ns>/`` (a namespaced route); False
    # for a namespace's own path (``namespaces/<ns>[/status]``), whose ``namespace`` is
    # its name, as upstream's RequestInfo sets it
    namespace_prefix: bool = False

    @property
    def path_name(self) -> str:
        """The object name the URL itself carries (not one a field selector implies)."""
        return self.parts[1] if len(self.parts) > 1 else ""

    @property
    def is_watch(self) -> bool:
        return self.verb == "watch"


def query_bool(query: Mapping[str, str], name: str) -> bool | None:
    """A boolean query parameter as apimachinery's ``Convert_Slice_string_To_bool``
    reads it (``k8s.io/apimachinery/pkg/runtime/conversion.go``): None when absent;
    False for ``0`` and for ``false`` in any letter case; True for anything else,
    including ``1``, ``t``, ``TRUE``, an empty value and words such as ``yes``. No value
    is unparseable, so no boolean parameter ever answers 400."""
    if name not in query:
        return None
    value = query[name]
    return not (value == "0" or value.lower() == "false")


def _valid_path_segment_name(name: str) -> bool:
    """``path.IsValidPathSegmentName``: not ``.``/``..``, no ``/`` or ``%``."""
    return name not in (".", "..") and "/" not in name and "%" not in name


def _list_options_name(query: Mapping[str, str]) -> str | None:
    """The ``metadata.name`` a list's field selector requires, or None. ``None`` also
    when the list options do not decode (a bad limit, timeoutSeconds or selector):
    upstream then drops everything it parsed but ``watch``."""
    try:
        for int_param in ("limit", "timeoutSeconds"):
            value = query.get(int_param, "")
            if value:
                int(value)
        label = query.get("labelSelector", "")
        if label:
            parse_label_selector(label)
        field = query.get("fieldSelector", "")
        selector = parse_field_selector(field) if field else None
    except (SelectorError, ValueError):
        return None
    if selector is None:
        return None
    name = selector.requires_exact_match("metadata.name")
    return name if name and _valid_path_segment_name(name) else None


def _non_resource(method: str, path: str) -> RequestInfo:
    # built only when returned: a frozen dataclass costs ~2.5 µs to build, a third of
    # a resource request's parse when it was built up front for every request
    return RequestInfo(False, path, method.lower())


def parse_request_info(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    """The RequestInfo of ``method`` + ``path`` + ``query``. Never raises: what cannot
    be a resource request is a non-resource one."""
    method = method.upper()
    stripped = path.strip("/")
    parts = stripped.split("/") if stripped else []
    if len(parts) < 3 or parts[0] not in _API_PREFIXES:
        return _non_resource(method, path)
    prefix, parts = parts[0], parts[1:]
    group = ""
    if prefix not in _GROUPLESS_PREFIXES:
        if len(parts) < 3:
            return _non_resource(method, path)
        group, parts = parts[0], parts[1:]
    version, parts = parts[0], parts[1:]

    verb_via_path = parts[0] in _SPECIAL_VERBS
    if verb_via_path:
        if len(parts) < 2:
            # upstream's factory fails here and its filter answers 500; a path no route
            # serves is a 404 here (bad input never answers 500)
            return _non_resource(method, path)
        verb, parts = parts[0], parts[1:]
    else:
        verb = _METHOD_VERBS.get(method, "")

    namespace, namespace_prefix = "", False
    if parts[0] == "namespaces" and len(parts) > 1:
        namespace = parts[1]
        if len(parts) > 2 and parts[2] not in _NAMESPACE_SUBRESOURCES:
            parts, namespace_prefix = parts[2:], True
    resource = parts[0]
    name = parts[1] if len(parts) > 1 else ""
    subresource = ""
    if len(parts) > 2 and verb not in _SPECIAL_VERBS_NO_SUBRESOURCES:
        subresource = parts[2]

    if not name and verb == "get":
        watch = bool(query_bool(query, "watch"))
        verb = "watch" if watch else "list"
        name = _list_options_name(query) or ""
    if not name and verb == "delete":
        verb = "deletecollection"

    field_selector = label_selector = ""
    if not verb_via_path and verb in _VERBS_WITH_SELECTORS:
        field_selector = query.get("fieldSelector", "")
        label_selector = query.get("labelSelector", "")
    return RequestInfo(
        is_resource_request=True,
        path=path,
        verb=verb,
        api_prefix=prefix,
        group=group,
        version=version,
        namespace=namespace,
        resource=resource,
        name=name,
        subresource=subresource,
        parts=tuple(parts),
        field_selector=field_selector,
        label_selector=label_selector,
        verb_via_path=verb_via_path,
        namespace_prefix=namespace_prefix,
    )


REQUEST_INFO = web.RequestKey("watchcache_request_info", RequestInfo)
"""Where the request-info filter stores the request's RequestInfo (upstream:
``request.WithRequestInfo`` / ``RequestInfoFrom``)."""


def request_info_of(request: web.Request) -> RequestInfo:
    """The RequestInfo the request-info filter computed (KeyError if the request did
    not pass it: the handler chain is wrong, as upstream's filters report)."""
    return request[REQUEST_INFO]
