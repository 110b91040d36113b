"""RequestInfo: what an HTTP request asks of the API, parsed from its path and method,
after kube-apiserver's ``RequestInfoFactory``.

Resource paths::

    /api/v1/<resource>[/<name>[/<subresource>]]
    /api/v1/namespaces/<ns>/<resource>[/<name>[/<subresource>]]
    /apis/<group>/<version>/...                      (same shapes)
    /api/v1/watch/...                                (deprecated watch prefix)

``namespaces/<ns>/status`` and ``namespaces/<ns>/finalize`` are the namespace's own
subresources, not a resource called "status" inside it. Anything else (``/api``,
``/apis/apps``, ``/healthz``) is a non-resource request.

Verbs: GET → get | list | watch; POST → create; PUT → update; PATCH → patch;
DELETE → delete | deletecollection. ``?watch=1|true`` turns list/get into watch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aiohttp import web

__all__ = ["REQUEST_INFO_KEY", "RequestInfo", "parse_request_info", "request_info"]

_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_TRUE = frozenset({"1", "true", "True", "TRUE", "t", "T"})


@dataclass(frozen=True, slots=True)
class RequestInfo:
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


def _is_watch(query: Mapping[str, str]) -> bool:
    return query.get("watch", "") in _TRUE


def parse_request_info(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    """Parse ``method`` + ``path`` (+ the query's ``watch``). Never raises."""
    method = method.upper()
    non_resource = RequestInfo(False, path, method.lower())
    segments = [s for s in path.strip("/").split("/")] if path.strip("/") else []
    if not segments or segments[0] not in ("api", "apis"):
        return non_resource
    prefix, rest = segments[0], segments[1:]
    if prefix == "apis":
        if len(rest) < 3:  # /apis, /apis/<g>, /apis/<g>/<v>: discovery
            return non_resource
        group, version, rest = rest[0], rest[1], rest[2:]
    else:
        if len(rest) < 2:  # /api, /api/v1
            return non_resource
        group, version, rest = "", rest[0], rest[1:]

    legacy_watch = False
    if rest and rest[0] == "watch":
        legacy_watch, rest = True, rest[1:]
        if not rest:
            return non_resource

    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if resource == "namespaces" and name:
        namespace = name  # a namespace's namespace is itself, as upstream

    verb = _verb(method, bool(name), legacy_watch or _is_watch(query))
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
        parts=tuple(rest),
    )


def _verb(method: str, has_name: bool, watch: bool) -> str:
    if method == "GET" or method == "HEAD":
        if watch:
            return "watch"
        return "get" if has_name else "list"
    if method == "DELETE":
        return "delete" if has_name else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())


# the request's RequestInfo, parsed once (by the outermost filter that needs it)
REQUEST_INFO_KEY = "watchcache.request_info"


def request_info(request: web.Request) -> RequestInfo:
    """The request's RequestInfo, parsed on first use and kept on the request."""
    info = request.get(REQUEST_INFO_KEY)
    if not isinstance(info, RequestInfo):
        info = parse_request_info(request.method, request.path, request.query)
        request[REQUEST_INFO_KEY] = info
    return info
