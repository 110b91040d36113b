"""Aggregated discovery: ``apidiscovery.k8s.io/v2`` APIGroupDiscoveryList for ``/api`` and
``/apis``, as kube-apiserver serves it since 1.30 (GA).

kubectl and client-go send ``Accept: application/json;g=apidiscovery.k8s.io;v=v2;
as=APIGroupDiscoveryList,application/json``. With the aggregated document they learn
every group, version and resource in two requests instead of one per group-version.

The documents are built once per resource set (:func:`build_documents`) and served as
cached bytes with a strong ``ETag`` (quoted upper-case hex of the SHA-512 of the
body); :func:`respond` answers ``If-None-Match`` with 304, as upstream's
``ServeHTTPWithETag`` does (also setting ``Vary: Accept`` and
``Cache-Control: public``). Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from proxy.apimachinery.api_resource import DiscoveredResource
from proxy.openapi.cached_document import CachedDocument
from storage.interfaces import JSONValue

__all__ = [
    "AGGREGATED_CONTENT_TYPE",
    "AggregatedDiscovery",
    "DiscoveryResource",
    "build_aggregated",
    "build_documents",
    "is_aggregated_request",
    "respond",
    "version_sort_key",
]

DISCOVERY_GROUP = "apidiscovery.k8s.io"
DISCOVERY_VERSION = "v2"
AGGREGATED_CONTENT_TYPE = (
    f"application/json;g={DISCOVERY_GROUP};v={DISCOVERY_VERSION};as=APIGroupDiscoveryList"
)


DiscoveryResource = DiscoveredResource  # one discovery entry (proxy.apimachinery.api_resource)


# kube-aggregator's group priorities (higher first); unknown groups sort after, by name.
GROUP_PRIORITY = {
    "": 18100,
    "apiregistration.k8s.io": 18000,
    "apps": 17800,
    "events.k8s.io": 17750,
    "authentication.k8s.io": 17700,
    "authorization.k8s.io": 17600,
    "autoscaling": 17500,
    "batch": 17400,
    "certificates.k8s.io": 17300,
    "networking.k8s.io": 17200,
    "policy": 17100,
    "rbac.authorization.k8s.io": 17000,
    "storage.k8s.io": 16800,
    "admissionregistration.k8s.io": 16700,
    "apiextensions.k8s.io": 16700,
    "scheduling.k8s.io": 16600,
    "coordination.k8s.io": 16500,
    "node.k8s.io": 16300,
    "discovery.k8s.io": 16200,
    "flowcontrol.apiserver.k8s.io": 16100,
    "internal.apiserver.k8s.io": 16000,
    "resource.k8s.io": 15900,
    "storagemigration.k8s.io": 15800,
}

_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_sort_key(version: str) -> tuple[int, int, int, str]:
    """Kubernetes version priority: GA before beta before alpha, higher numbers first;
    versions that do not look like ``v1beta2`` come last, alphabetically."""
    m = _VERSION.match(version)
    if not m:
        return (3, 0, 0, version)
    stage = {None: 0, "beta": 1, "alpha": 2}[m[2]]
    return (stage, -int(m[1]), -int(m[3] or 0), "")


def _group_sort_key(group: str) -> tuple[int, str]:
    return (-GROUP_PRIORITY.get(group, 0), group)


def _gvk(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "version": version, "kind": kind}


def _subresource(res: DiscoveryResource, name: str) -> dict[str, JSONValue]:
    facts = res.subresource_info(name)  # as the subresource's server declared it
    kind = facts.kind or (res.group, res.version, res.kind)
    return {"subresource": name, "responseKind": _gvk(*kind), "verbs": list(facts.verbs)}


def _resource(res: DiscoveryResource) -> dict[str, JSONValue]:
    out: dict[str, JSONValue] = {
        "resource": res.plural,
        "responseKind": _gvk(res.group, res.version, res.kind),
        "scope": "Namespaced" if res.namespaced else "Cluster",
        "singularResource": getattr(res, "singular", res.kind.lower()),
        "verbs": list(res.verbs),
    }
    if res.short_names:
        out["shortNames"] = list(res.short_names)
    if res.categories:
        out["categories"] = list(res.categories)
    if res.subresources:
        out["subresources"] = [_subresource(res, s) for s in sorted(res.subresources)]
    return out


def build_aggregated(
    resources: Iterable[DiscoveryResource], *, legacy: bool
) -> dict[str, JSONValue]:
    """The APIGroupDiscoveryList of ``/api`` (``legacy``: the core group) or ``/apis``.

    Groups by kube's priority, versions by version priority (the first is the
    preferred one), resources by name. An empty ``/api`` still lists the core group
    only if it has resources.
    """
    grouped: dict[str, dict[str, list[DiscoveryResource]]] = {}
    for res in resources:
        if (res.group == "") != legacy:
            continue
        grouped.setdefault(res.group, {}).setdefault(res.version, []).append(res)
    items = []
    for group in sorted(grouped, key=_group_sort_key):
        versions = grouped[group]
        metadata: dict[str, JSONValue] = {"creationTimestamp": None}
        if group:
            metadata = {"name": group, "creationTimestamp": None}
        items.append(
            {
                "metadata": metadata,
                "versions": [
                    {
                        "version": v,
                        "resources": [
                            _resource(r) for r in sorted(versions[v], key=lambda r: r.plural)
                        ],
                        "freshness": "Current",
                    }
                    for v in sorted(versions, key=version_sort_key)
                ],
            }
        )
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"{DISCOVERY_GROUP}/{DISCOVERY_VERSION}",
        "metadata": {},
        "items": items,
    }


AggregatedDiscovery = CachedDocument  # one served document: body, hash, etag


def build_documents(resources: Iterable[DiscoveryResource]) -> dict[str, AggregatedDiscovery]:
    """``{"/api": ..., "/apis": ...}`` for a resource set; build once, serve many."""
    items = list(resources)
    return {
        "/api": AggregatedDiscovery.of(build_aggregated(items, legacy=True)),
        "/apis": AggregatedDiscovery.of(build_aggregated(items, legacy=False)),
    }


def is_aggregated_request(accept: str | None) -> bool:
    """True when the Accept header's first servable choice is the v2 aggregated list.

    Media ranges are read in the client's order (kube's clients list the aggregated
    type first and ``application/json`` as fallback); a plain ``application/json`` or
    ``*/*`` before it means the legacy APIVersions/APIGroupList.
    """
    for clause in (accept or "").split(","):
        parts = [p.strip() for p in clause.split(";")]
        media = parts[0].lower()
        params = dict(p.partition("=")[::2] for p in parts[1:])
        if media not in ("application/json", "*/*", "application/*"):
            continue
        if "as" not in params:
            return False
        if (
            params.get("as") == "APIGroupDiscoveryList"
            and params.get("g") == DISCOVERY_GROUP
            and params.get("v") == DISCOVERY_VERSION
        ):
            return True
    return False


def respond(
    document: AggregatedDiscovery, request_headers: Mapping[str, str]
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) for a request that wants the aggregated document.

    304 with an empty body when ``If-None-Match`` equals the ETag; else 200 with the
    aggregated Content-Type. Header lookup is case-insensitive for plain dicts too.
    """
    headers = {
        "ETag": document.etag,
        "Vary": "Accept",
        "Cache-Control": "public",
    }
    if document.not_modified(request_headers):
        return 304, headers, b""
    headers["Content-Type"] = AGGREGATED_CONTENT_TYPE
    return 200, headers, document.body
