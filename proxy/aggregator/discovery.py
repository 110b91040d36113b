"""Discovery with the extension servers' group-versions merged in (kube-aggregator's
``apisHandler``, ``apiGroupHandler`` and aggregated discovery manager).

- Legacy ``/apis``: ``apiregistration.k8s.io`` first ("it's good to be king"), then every
  group — this server's own and those of remote APIServices — by group priority (the
  highest ``groupPriorityMinimum`` of its versions, higher first), ties by name; within
  a group, versions by ``versionPriority`` (higher first), then Kubernetes version order;
  the first is the preferred version. Remote APIServices are listed whether or not they
  are available, as upstream (clients then report the group as unreachable).
- ``/apis/<remote group>``: its APIGroup from the APIServices.
- Aggregated ``/apis`` (``apidiscovery.k8s.io/v2``): the local document's groups plus,
  for each remote group-version whose backend answered once, the version entry it
  serves (its own aggregated document, else built from its APIResourceList), marked
  ``Stale`` while its APIService is not available; ordered by the same priorities.

Pure functions over the APIService refs and the fetched entries; the fetching is
``fetch_version_discovery``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

import aiohttp

from proxy.aggregator.apiservice import CRD_PRIORITY, GROUP, LOCAL_PRIORITIES, APIServiceRef
from proxy.aggregator.transport import REMOTE_GROUP, REMOTE_USER
from proxy.endpoints.discovery.aggregated import (
    AGGREGATED_CONTENT_TYPE,
    GROUP_PRIORITY,
    version_sort_key,
)

__all__ = [
    "aggregated_group_list",
    "api_group",
    "fetch_openapi_url",
    "fetch_version_discovery",
    "legacy_group_list",
    "remote_groups",
]

JSON = dict[str, Any]
# (group, version, groupPriorityMinimum, versionPriority)
Entry = tuple[str, str, int, int]


def _local_entries(local_versions: Iterable[tuple[str, str]]) -> list[Entry]:
    out: list[Entry] = []
    for group, version in local_versions:
        # a group-version without upstream priorities is a CRD's: 1000/100 (autoregister)
        gpm, vp = LOCAL_PRIORITIES.get((group, version), CRD_PRIORITY)
        out.append((group, version, gpm, vp))
    return out


def _sorted_groups(entries: Iterable[Entry]) -> list[tuple[str, list[str]]]:
    """``SortedByGroupAndVersion``: [(group, [versions, preferred first])]."""
    by_group: dict[str, dict[str, Entry]] = {}
    for e in entries:
        by_group.setdefault(e[0], {}).setdefault(e[1], e)
    order = sorted(by_group, key=lambda g: (-max(e[2] for e in by_group[g].values()), g))
    out: list[tuple[str, list[str]]] = []
    for group in order:
        versions = by_group[group]
        ranked = sorted(versions, key=lambda v: (-versions[v][3], version_sort_key(v)))
        out.append((group, ranked))
    return out


def remote_groups(refs: Iterable[APIServiceRef]) -> dict[str, list[APIServiceRef]]:
    """Remote APIServices by group (the core group is never aggregated)."""
    out: dict[str, list[APIServiceRef]] = {}
    for ref in refs:
        if not ref.local and ref.group:
            out.setdefault(ref.group, []).append(ref)
    return out


def _entries(
    local_versions: Iterable[tuple[str, str]], refs: Iterable[APIServiceRef]
) -> list[Entry]:
    entries = _local_entries(local_versions)
    for ref in refs:
        if not ref.local and ref.group:
            entries.append(
                (ref.group, ref.version, ref.group_priority_minimum, ref.version_priority)
            )
    return entries


def _group_body(group: str, versions: list[str]) -> JSON:
    listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": listed, "preferredVersion": listed[0]}


def legacy_group_list(
    local_versions: Iterable[tuple[str, str]], refs: Iterable[APIServiceRef]
) -> JSON:
    """The APIGroupList of ``/apis`` (see the module docstring)."""
    entries = [e for e in _entries(local_versions, refs) if e[0] and e[0] != GROUP]
    groups = [_group_body(GROUP, ["v1"])]
    groups += [_group_body(g, vs) for g, vs in _sorted_groups(entries)]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(group: str, refs: Iterable[APIServiceRef]) -> JSON | None:
    """The APIGroup of a remote group, or None when no APIService serves it."""
    entries = [e for e in _entries((), refs) if e[0] == group]
    if not entries:
        return None
    ((name, versions),) = _sorted_groups(entries)
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_body(name, versions)}


def aggregated_group_list(
    local: Mapping[str, Any], refs: Iterable[APIServiceRef], fetched: Mapping[str, JSON]
) -> JSON:
    """The local aggregated ``/apis`` document with the remote version entries
    (``fetched``: APIService name -> its APIVersionDiscovery) merged in."""
    items: dict[str, JSON] = {}
    priority: dict[str, int] = {}
    for item in local.get("items") or []:
        name = str((item.get("metadata") or {}).get("name") or "")
        items[name] = item
        priority[name] = GROUP_PRIORITY.get(name, 0)
    for group, group_refs in remote_groups(refs).items():
        versions = []
        for ref in sorted(
            group_refs, key=lambda r: (-r.version_priority, version_sort_key(r.version))
        ):
            entry = fetched.get(ref.name)
            if entry is None:
                continue
            entry = copy.deepcopy(entry)
            entry["freshness"] = "Current" if ref.available else "Stale"
            versions.append(entry)
        if not versions or group in items:
            continue
        items[group] = {
            "metadata": {"name": group, "creationTimestamp": None},
            "versions": versions,
        }
        priority[group] = max(r.group_priority_minimum for r in group_refs)
    order = sorted(items, key=lambda g: (-priority[g], g))
    return {**local, "items": [items[g] for g in order]}


def _from_resource_list(version: str, body: JSON) -> JSON:
    """An APIVersionDiscovery built from a legacy APIResourceList (servers without
    aggregated discovery, as upstream converts them)."""
    group = str(body.get("groupVersion") or "").partition("/")[0]
    parents: dict[str, JSON] = {}
    subs: list[JSON] = []
    for r in body.get("resources") or []:
        name = str(r.get("name") or "")
        if "/" in name:
            subs.append(r)
            continue
        parents[name] = {
            "resource": name,
            "responseKind": {"group": r.get("group", group), "version": r.get("version", version),
                             "kind": r.get("kind", "")},
            "scope": "Namespaced" if r.get("namespaced") else "Cluster",
            "singularResource": r.get("singularName", ""),
            "verbs": list(r.get("verbs") or []),
        }  # fmt: skip
        for key in ("shortNames", "categories"):
            if r.get(key):
                parents[name][key] = list(r[key])
    for s in subs:
        parent, _, sub = str(s["name"]).partition("/")
        if parent in parents:
            parents[parent].setdefault("subresources", []).append(
                {"subresource": sub, "responseKind": {"group": group, "version": version,
                 "kind": s.get("kind", "")}, "verbs": list(s.get("verbs") or [])}
            )  # fmt: skip
    return {"version": version, "resources": [parents[n] for n in sorted(parents)],
            "freshness": "Current"}  # fmt: skip


async def fetch_version_discovery(
    session: aiohttp.ClientSession, base_url: str, server_name: str, ref: APIServiceRef
) -> JSON | None:
    """``ref``'s APIVersionDiscovery from its backend: its aggregated ``/apis``, else its
    ``/apis/<group>/<version>`` APIResourceList. None when neither answers."""
    headers = {REMOTE_USER: "system:kube-aggregator", REMOTE_GROUP: "system:masters"}
    accept = f"{AGGREGATED_CONTENT_TYPE},application/json"
    async with session.get(
        f"{base_url}/apis", headers={**headers, "Accept": accept}, server_hostname=server_name
    ) as resp:
        if resp.status == 200 and "apidiscovery.k8s.io" in resp.headers.get("Content-Type", ""):
            doc = await resp.json(content_type=None)
            for item in doc.get("items") or []:
                if (item.get("metadata") or {}).get("name") != ref.group:
                    continue
                for entry in item.get("versions") or []:
                    if entry.get("version") == ref.version:
                        return dict(entry)
    async with session.get(
        f"{base_url}/apis/{ref.group}/{ref.version}",
        headers={**headers, "Accept": "application/json"},
        server_hostname=server_name,
    ) as resp:
        if resp.status != 200:
            return None
        return _from_resource_list(ref.version, await resp.json(content_type=None))


async def fetch_openapi_url(
    session: aiohttp.ClientSession, base_url: str, server_name: str, ref: APIServiceRef
) -> str | None:
    """The ``serverRelativeURL`` the backend's ``/openapi/v3`` index gives for ``ref``'s
    group-version (None: it publishes none)."""
    headers = {REMOTE_USER: "system:kube-aggregator", REMOTE_GROUP: "system:masters"}
    async with session.get(
        f"{base_url}/openapi/v3", headers=headers, server_hostname=server_name
    ) as resp:
        if resp.status != 200:
            return None
        index = await resp.json(content_type=None)
    entry = (index.get("paths") or {}).get(f"apis/{ref.group}/{ref.version}") or {}
    url = entry.get("serverRelativeURL")
    return url if isinstance(url, str) and url.startswith("/openapi/v3/") else None
