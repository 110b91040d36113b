"""What kube-apiserver's scheme knows of kinds, and what its decoder says when a request
body's kind or apiVersion does not fit the endpoint.

kube-apiserver decodes a body with the scheme (``runtime.Scheme`` of
``pkg/api/legacyscheme``) into the endpoint's internal type, then checks the version
(``handlers/create.go``, ``update.go``). The three refusals, 400 BadRequest each::

    a kind the scheme cannot create at that version
        Pod in version "v1" cannot be handled as a Pod: no kind "Pod" is registered for
        version "apps/v1" in scheme "pkg/api/legacyscheme/scheme.go:30"
    a kind it creates but cannot convert to the endpoint's
        Service in version "v1" cannot be handled as a Pod: converting (v1.Service) to
        (core.Pod): unknown conversion
    the endpoint's kind at another version of its group
        the API version in the data (autoscaling/v1) does not match the expected API
        version (autoscaling/v2)

A missing kind or apiVersion is filled in from the endpoint (Go's ``gvkWithDefaults``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from proxy import apierrors
from proxy.registry.catalogue import load_catalogue
from proxy.registry.resources import ResourceInfo

__all__ = ["check_kind", "register_scheme"]

JSON = dict[str, Any]


def check_kind(obj: JSON, resource: ResourceInfo) -> None:
    """kind/apiVersion must name the endpoint's (see the module docstring); missing ones
    are defaulted and set on ``obj``."""
    api_version = obj.get("apiVersion") or resource.api_version
    kind = obj.get("kind") or resource.kind
    if not isinstance(api_version, str) or not isinstance(kind, str):
        raise apierrors.bad_request("Object 'Kind' is missing or invalid in request body")
    group, _, version = api_version.rpartition("/")
    if not version and group == resource.group:
        version, api_version = resource.version, resource.api_version
    gvk = (group, version, kind)
    if gvk != (resource.group, resource.version, resource.kind):
        internal = _SHARED_INTERNAL.get((group, kind), (group, kind))
        if internal == (resource.group, resource.kind) and gvk in _scheme_kinds():
            raise apierrors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected "
                f"API version ({resource.api_version})"
            )
        handled = f'{kind} in version "{version}" cannot be handled as a {resource.kind}'
        raise apierrors.bad_request(f"{handled}: {_decode_failure(gvk, resource)}")
    obj["apiVersion"], obj["kind"] = api_version, kind


# the name kube-apiserver's scheme carries in its errors (where legacyscheme.Scheme is made)
_SCHEME_NAME = "pkg/api/legacyscheme/scheme.go:30"
# meta/v1 kinds every group version registers (metav1.AddToGroupVersion), and the
# unversioned ones a scheme creates at any version; their Go package is meta/v1's "v1"
_OPTIONS_KINDS = frozenset({"WatchEvent", "ListOptions", "GetOptions", "DeleteOptions",
                            "CreateOptions", "UpdateOptions", "PatchOptions"})  # fmt: skip
_UNVERSIONED_KINDS = frozenset(
    {"Status", "APIVersions", "APIGroupList", "APIGroup", "APIResourceList"}
)


# What the served kinds' owners add to the scheme (``register_scheme``; kube's: the
# versions its scheme still decodes but no longer serves, and kinds decoded into another
# group's internal type). The catalogue knows only the served versions.
_UNSERVED_VERSIONS: dict[str, tuple[str, ...]] = {}
_SHARED_INTERNAL: dict[tuple[str, str], tuple[str, str]] = {}


def register_scheme(
    unserved_versions: Mapping[str, tuple[str, ...]],
    shared_internal: Mapping[tuple[str, str], tuple[str, str]],
) -> None:
    """Add ``unserved_versions`` (group -> versions a kind of the group is taken to exist
    at) and ``shared_internal`` ((group, kind) -> the (group, kind) it decodes into) to the
    scheme (idempotent; the composition root calls it, as upstream's install packages
    add their groups to legacyscheme)."""
    _UNSERVED_VERSIONS.update(unserved_versions)
    _SHARED_INTERNAL.update(shared_internal)
    _scheme_kinds.cache_clear()


@functools.cache
def _scheme_kinds() -> frozenset[tuple[str, str, str]]:
    """(group, version, kind) of every kind of the catalogue (at its served versions and
    at ``_UNSERVED_VERSIONS``), its List, and the meta/v1 option kinds each group
    version registers."""
    kinds: set[tuple[str, str, str]] = set()
    for r in load_catalogue():
        for version in (r.version, *_UNSERVED_VERSIONS.get(r.group, ())):
            kinds.update({(r.group, version, r.kind), (r.group, version, r.list_kind)})
            kinds.update((r.group, version, k) for k in _OPTIONS_KINDS)
    return frozenset(kinds)


def _decode_failure(gvk: tuple[str, str, str], resource: ResourceInfo) -> str:
    """Why the decoder cannot make ``resource``'s kind from a body of ``gvk``: the scheme
    cannot create that kind (``no kind ... is registered``), or the object it creates has
    no conversion to the endpoint's internal type."""
    group, version, kind = gvk
    if kind in _UNVERSIONED_KINDS or (kind in _OPTIONS_KINDS and gvk in _scheme_kinds()):
        source = f"v1.{kind}"  # meta/v1's Go package
    elif gvk in _scheme_kinds():
        source = f"{version}.{kind}"  # k8s.io/api/<group>/<version>'s Go package
    else:
        group_version = f"{group}/{version}" if group else version
        return (
            f'no kind "{kind}" is registered for version "{group_version}" in scheme '
            f'"{_SCHEME_NAME}"'
        )
    # internal types live in pkg/apis/<first label of the group> (core for "")
    internal = resource.group.split(".", 1)[0] or "core"
    return f"converting ({source}) to ({internal}.{resource.kind}): unknown conversion"
