"""The resource registry: which resources this server serves, and how.

The catalogue (kind, plural, scope, verbs, subresources of every built-in resource)
comes from the maintained ``lightkube-models`` package. Its ``lightkube.resources``
modules import ``lightkube.core`` (the client, not installed), so they are read as
source: each resource class carries a literal ``_api_info = res.ApiInfo(...)``
expression that is evaluated with ``ast.literal_eval`` on its arguments, no import.

What lightkube does not know — kubectl's short names and categories — is kept here,
as kube-apiserver's REST storages declare them.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib.util
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from proxy.openapi import schemas
from proxy.openapi.schemas import SchemaNode
from proxy.registry.kind_schema import KindSchema

__all__ = [
    "REVIEWS",
    "REVIEW_GROUPS",
    "SERVED",
    "VIRTUAL",
    "Registry",
    "ResourceInfo",
    "build_registry",
    "load_catalogue",
]

# (group, version, plural) of every resource served. The catalogue provides the rest.
SERVED: tuple[tuple[str, str, str], ...] = (
    ("", "v1", "namespaces"),
    ("", "v1", "pods"),
    ("", "v1", "nodes"),
    ("", "v1", "configmaps"),
    ("", "v1", "secrets"),
    ("", "v1", "services"),
    ("", "v1", "endpoints"),
    ("", "v1", "events"),
    ("", "v1", "serviceaccounts"),
    ("", "v1", "persistentvolumeclaims"),
    ("", "v1", "persistentvolumes"),
    ("apps", "v1", "deployments"),
    ("apps", "v1", "replicasets"),
    ("apps", "v1", "statefulsets"),
    ("apps", "v1", "daemonsets"),
    ("batch", "v1", "jobs"),
    ("batch", "v1", "cronjobs"),
    ("coordination.k8s.io", "v1", "leases"),
    ("rbac.authorization.k8s.io", "v1", "roles"),
    ("rbac.authorization.k8s.io", "v1", "rolebindings"),
    ("rbac.authorization.k8s.io", "v1", "clusterroles"),
    ("rbac.authorization.k8s.io", "v1", "clusterrolebindings"),
    ("discovery.k8s.io", "v1", "endpointslices"),
    # every other built-in resource with plain storage, at its preferred version
    ("", "v1", "podtemplates"),
    ("", "v1", "replicationcontrollers"),
    ("", "v1", "limitranges"),
    ("", "v1", "resourcequotas"),
    ("apps", "v1", "controllerrevisions"),
    ("autoscaling", "v2", "horizontalpodautoscalers"),
    ("autoscaling", "v1", "horizontalpodautoscalers"),  # over v2's storage (proxy.kube.conversion)
    ("policy", "v1", "poddisruptionbudgets"),
    ("networking.k8s.io", "v1", "ingresses"),
    ("networking.k8s.io", "v1", "ingressclasses"),
    ("networking.k8s.io", "v1", "networkpolicies"),
    ("networking.k8s.io", "v1", "ipaddresses"),
    ("networking.k8s.io", "v1", "servicecidrs"),
    ("storage.k8s.io", "v1", "storageclasses"),
    ("storage.k8s.io", "v1", "volumeattachments"),
    ("storage.k8s.io", "v1", "csidrivers"),
    ("storage.k8s.io", "v1", "csinodes"),
    ("storage.k8s.io", "v1", "csistoragecapacities"),
    ("storage.k8s.io", "v1", "volumeattributesclasses"),
    ("scheduling.k8s.io", "v1", "priorityclasses"),
    ("node.k8s.io", "v1", "runtimeclasses"),
    ("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations"),
    ("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations"),
    ("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies"),
    ("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings"),
    ("admissionregistration.k8s.io", "v1", "mutatingadmissionpolicies"),
    ("admissionregistration.k8s.io", "v1", "mutatingadmissionpolicybindings"),
    ("certificates.k8s.io", "v1", "certificatesigningrequests"),
    ("certificates.k8s.io", "v1", "clustertrustbundles"),
    ("certificates.k8s.io", "v1", "podcertificaterequests"),
    ("flowcontrol.apiserver.k8s.io", "v1", "flowschemas"),
    ("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations"),
    ("resource.k8s.io", "v1", "deviceclasses"),
    ("resource.k8s.io", "v1", "devicetaintrules"),
    ("resource.k8s.io", "v1", "resourceclaims"),
    ("resource.k8s.io", "v1", "resourceclaimtemplates"),
    ("resource.k8s.io", "v1", "resourceslices"),
    ("storagemigration.k8s.io", "v1", "storageversionmigrations"),
    ("events.k8s.io", "v1", "events"),  # the core Events, converted (proxy.kube.conversion)
    ("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
    # API aggregation (proxy/aggregator): the APIService objects
    ("apiregistration.k8s.io", "v1", "apiservices"),
)
# Not served: virtual resources without storage (tokenreviews, *accessreviews and
# selfsubject* are REVIEWS, bindings and componentstatuses VIRTUAL),
# serviceaccounts/token;
# custom resources are added and removed at run time (``proxy.apiextensions``), and
# alpha and beta versions (off by default in kube-apiserver).

# Subresources served (the catalogue lists more: scale, log, eviction, ...).
# the review APIs: create-only, never stored; served (routes, discovery) with the secure
# port only, where authentication and authorization exist
REVIEWS: tuple[tuple[str, str, str], ...] = (
    ("authentication.k8s.io", "v1", "selfsubjectreviews"),
    ("authentication.k8s.io", "v1", "tokenreviews"),
    ("authorization.k8s.io", "v1", "localsubjectaccessreviews"),
    ("authorization.k8s.io", "v1", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "v1", "selfsubjectrulesreviews"),
    ("authorization.k8s.io", "v1", "subjectaccessreviews"),
)
REVIEW_GROUPS = frozenset(group for group, _, _ in REVIEWS)

# (pods/eviction: proxy.kube.eviction; certificatesigningrequests/approval: its strategy;
# log, exec, attach, portforward, nodes/proxy: the kubelet's, proxied; pods/proxy,
# services/proxy: to pod IPs)
SERVED_SUBRESOURCES = frozenset({"status", "scale", "binding", "finalize", "eviction",
                                 "approval", "log", "exec", "attach", "portforward", "proxy",
                                 "ephemeralcontainers"})  # fmt: skip
# the connect subresources (rest.Connecter storages, served by proxying) that the
# catalogue does not list: it models only the subresources that have a kind of their own
CONNECT_SUBRESOURCES: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "pods"): ("attach", "exec", "portforward", "proxy"),
    ("", "nodes"): ("proxy",),
    ("", "services"): ("proxy",),
}

# Resources served without storage of their own (kube-apiserver's legacy REST storages):
# POST /api/v1/namespaces/NS/bindings binds the pod the Binding names
# (``proxy.kube.binding``); componentstatuses probe the control plane
# (``proxy.kube.componentstatus``). No watch cache is built for them.
VIRTUAL: tuple[tuple[str, str, str], ...] = (
    ("", "v1", "bindings"),
    ("", "v1", "componentstatuses"),
)
# what upstream's REST storages declare where the catalogue differs
_VIRTUAL_VERBS = {"componentstatuses": ("get", "list")}

# kubectl's short names, as kube-apiserver's REST storages declare them (ShortNames()).
SHORT_NAMES: dict[str, tuple[str, ...]] = {
    "pods": ("po",),
    "nodes": ("no",),
    "namespaces": ("ns",),
    "configmaps": ("cm",),
    "services": ("svc",),
    "endpoints": ("ep",),
    "events": ("ev",),
    "serviceaccounts": ("sa",),
    "persistentvolumeclaims": ("pvc",),
    "persistentvolumes": ("pv",),
    "replicationcontrollers": ("rc",),
    "deployments": ("deploy",),
    "replicasets": ("rs",),
    "statefulsets": ("sts",),
    "daemonsets": ("ds",),
    "cronjobs": ("cj",),
    "limitranges": ("limits",),
    "resourcequotas": ("quota",),
    "horizontalpodautoscalers": ("hpa",),
    "poddisruptionbudgets": ("pdb",),
    "ingresses": ("ing",),
    "networkpolicies": ("netpol",),
    "storageclasses": ("sc",),
    "priorityclasses": ("pc",),
    "certificatesigningrequests": ("csr",),
    "ipaddresses": ("ip",),
    "volumeattributesclasses": ("vac",),
    "customresourcedefinitions": ("crd", "crds"),
    "componentstatuses": ("cs",),
}

# Categories (Categories()): `kubectl get all` expands "all" through discovery.
CATEGORIES: dict[str, tuple[str, ...]] = {
    "pods": ("all",),
    "services": ("all",),
    "replicationcontrollers": ("all",),
    "deployments": ("all",),
    "replicasets": ("all",),
    "statefulsets": ("all",),
    "daemonsets": ("all",),
    "jobs": ("all",),
    "cronjobs": ("all",),
    "horizontalpodautoscalers": ("all",),
    "customresourcedefinitions": ("api-extensions",),
}

# Resources whose PUT creates a missing object (AllowCreateOnUpdate in their strategy).
CREATE_ON_UPDATE = frozenset(
    {
        "endpoints",
        "events",
        "leases",
        "roles",
        "rolebindings",
        "clusterroles",
        "clusterrolebindings",
        "endpointslices",
    }
)

# lightkube's verb names -> the API verbs discovery reports.
_VERBS = {
    "post": "create",
    "put": "update",
    "patch": "patch",
    "get": "get",
    "list": "list",
    "watch": "watch",
    "delete": "delete",
    "deletecollection": "deletecollection",
}


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """One served resource (or a catalogue entry): the facts discovery and the
    handlers need. ``verbs`` are API verbs (create, get, list, ...), sorted."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    verbs: tuple[str, ...]
    subresources: tuple[str, ...] = ()
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    create_on_update: bool = False
    singular_name: str = ""  # a CRD's names.singular; built-ins: the kind in lower case
    # a custom kind's schema, apply type and columns (its served version's); None for a
    # built-in kind, whose come from the built-in OpenAPI and printers. Not part of the
    # resource's identity (equality, hashing): the same resource with a changed schema.
    kind_schema: KindSchema | None = field(default=None, compare=False, repr=False)

    @property
    def singular(self) -> str:
        return self.singular_name or self.kind.lower()

    @property
    def has_storage(self) -> bool:
        """False for the review APIs and the virtual resources (``VIRTUAL``): no etcd
        keys, no watch cache."""
        key = (self.group, self.version, self.plural)
        return self.group not in REVIEW_GROUPS and key not in VIRTUAL

    @property
    def api_version(self) -> str:
        """``v1`` for the core group, ``apps/v1`` otherwise."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def qualified(self) -> str:
        """The GroupResource string errors use: ``pods``, ``deployments.apps``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def group_kind(self) -> str:
        """The GroupKind string Invalid errors use: ``Pod``, ``Deployment.apps``."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    def allows(self, verb: str) -> bool:
        return verb in self.verbs

    def request_schema(self) -> SchemaNode | None:
        """The schema request bodies and patches are checked against: a custom kind's
        served version's, else the built-in kind's (None when unknown)."""
        if self.kind_schema is not None:
            return self.kind_schema.request
        return schemas.kind_schema(self.group, self.version, self.kind)


@dataclass(frozen=True, slots=True)
class _Entry:
    """One ``_api_info`` read from the catalogue's source."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    verbs: tuple[str, ...]
    parent_kind: str | None
    action: str | None


def _resources_dir() -> Path:
    spec = importlib.util.find_spec("lightkube.resources")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("lightkube-models is not installed (lightkube.resources missing)")
    return Path(next(iter(spec.submodule_search_locations)))


def _literal_kwargs(call: ast.Call) -> dict[str, object]:
    """Keyword arguments of ``res.ApiInfo(...)``; ``res.ResourceDef(g, v, k)`` becomes a tuple."""
    out: dict[str, object] = {}
    for kw in call.keywords:
        value = kw.value
        if isinstance(value, ast.Call):
            out[kw.arg or ""] = tuple(ast.literal_eval(a) for a in value.args)
        else:
            out[kw.arg or ""] = ast.literal_eval(value)
    return out


def _entries_of(source: str) -> Iterator[_Entry]:
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ClassDef):
            continue
        bases = {ast.unparse(b) for b in node.bases}
        namespaced = any(b.startswith("res.Namespaced") for b in bases)
        for stmt in node.body:
            if not (
                isinstance(stmt, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "_api_info" for t in stmt.targets)
                and isinstance(stmt.value, ast.Call)
            ):
                continue
            kw = _literal_kwargs(stmt.value)
            resource_def = kw["resource"]
            assert isinstance(resource_def, tuple) and len(resource_def) == 3
            group, version, kind = (str(x) for x in resource_def)
            parent = kw.get("parent")
            yield _Entry(
                group=str(group),
                version=str(version),
                kind=str(kind),
                plural=str(kw["plural"]),
                namespaced=namespaced,
                verbs=tuple(str(v) for v in kw.get("verbs", ())),  # type: ignore[attr-defined]
                parent_kind=str(parent[2]) if isinstance(parent, tuple) else None,
                action=str(kw["action"]) if kw.get("action") else None,
            )


@functools.cache
def load_catalogue() -> tuple[ResourceInfo, ...]:
    """Every top-level resource of the catalogue, with its subresource names."""
    entries: list[_Entry] = []
    for path in sorted(_resources_dir().glob("*.py")):
        entries.extend(_entries_of(path.read_text(encoding="utf-8")))
    subs: dict[tuple[str, str, str], list[str]] = {}
    for e in entries:
        if e.action is not None:
            # a subresource's "resource" may be another kind (Scale); the parent's group
            # and version are those of the plural it hangs under.
            subs.setdefault((e.version, e.plural, e.parent_kind or ""), []).append(e.action)
    out: list[ResourceInfo] = []
    for e in entries:
        if e.action is not None:
            continue
        verbs = sorted({_VERBS[v] for v in e.verbs if v in _VERBS})
        out.append(
            ResourceInfo(
                group=e.group,
                version=e.version,
                kind=e.kind,
                plural=e.plural,
                namespaced=e.namespaced,
                verbs=tuple(verbs),
                subresources=tuple(sorted(subs.get((e.version, e.plural, e.kind), ()))),
                short_names=SHORT_NAMES.get(e.plural, ()),
                categories=CATEGORIES.get(e.plural, ()),
                create_on_update=e.plural in CREATE_ON_UPDATE,
            )
        )
    return tuple(out)


@dataclass
class Registry:
    """The served resources, looked up by (group, version, plural).

    ``groups`` keeps discovery order: the core group first, then groups in the order
    of ``SERVED``; each group's versions in order of appearance.
    """

    resources: dict[tuple[str, str, str], ResourceInfo] = field(default_factory=dict)

    def add(self, info: ResourceInfo) -> None:
        self.resources[(info.group, info.version, info.plural)] = info

    def remove(self, group: str, version: str, plural: str) -> None:
        """Stop serving a resource added at run time (a custom resource's version)."""
        self.resources.pop((group, version, plural), None)

    def get(self, group: str, version: str, plural: str) -> ResourceInfo | None:
        return self.resources.get((group, version, plural))

    def lookup(self, group: str, plural: str) -> ResourceInfo | None:
        """The first served version of ``plural`` in ``group`` (for cross-resource checks)."""
        for (g, _, p), info in self.resources.items():
            if g == group and p == plural:
                return info
        return None

    def versions(self, group: str) -> list[str]:
        seen: list[str] = []
        for g, v, _ in self.resources:
            if g == group and v not in seen:
                seen.append(v)
        return seen

    def groups(self) -> list[str]:
        """Named groups (the core group "" excluded), in served order."""
        seen: list[str] = []
        for g, _, _ in self.resources:
            if g and g not in seen:
                seen.append(g)
        return seen

    def in_group_version(self, group: str, version: str) -> list[ResourceInfo]:
        return [r for (g, v, _), r in self.resources.items() if g == group and v == version]

    def __iter__(self) -> Iterator[ResourceInfo]:
        return iter(self.resources.values())


def build_registry(
    served: Iterable[tuple[str, str, str]] = SERVED,
    catalogue: Iterable[ResourceInfo] | None = None,
) -> Registry:
    """A Registry of ``served`` from the catalogue; a name missing from it is an error."""
    by_key = {(r.group, r.version, r.plural): r for r in (catalogue or load_catalogue())}
    registry = Registry()
    for key in served:
        info = by_key.get(key)
        if info is None:
            raise LookupError(f"resource {key} is not in the lightkube-models catalogue")
        every = (*info.subresources, *CONNECT_SUBRESOURCES.get((info.group, info.plural), ()))
        served_subresources = tuple(sorted(s for s in every if s in SERVED_SUBRESOURCES))
        verbs = _VIRTUAL_VERBS.get(info.plural, info.verbs) if key in VIRTUAL else info.verbs
        registry.add(dataclasses.replace(info, subresources=served_subresources, verbs=verbs))
    return registry
