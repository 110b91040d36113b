"""kube's built-in resources: which of the catalogue's kinds this server serves, and what
their REST storages declare beyond it (kube-apiserver's ``pkg/registry/<group>/<resource>
/storage``: ``ShortNames()``, ``Categories()``, ``AllowCreateOnUpdate()``, the
subresources each installs, the review APIs' and virtual resources' storage-less REST).

The composition root (``proxy.app``) builds the served Registry from these, the CRD's
and APIService's (their servers declare them) and nothing else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from proxy.apimachinery.api_resource import DEFAULT_SUBRESOURCE_VERBS, SubresourceInfo
from proxy.registry.catalogue import catalogued
from proxy.registry.resources import Registry, ResourceInfo

__all__ = [
    "REVIEWS",
    "REVIEW_GROUPS",
    "SECURE_SUBRESOURCES",
    "SERVED",
    "VIRTUAL",
    "build_registry",
    "declared",
    "kube_resources",
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
)
# Not served: virtual resources without storage (tokenreviews, *accessreviews and
# selfsubject* are REVIEWS, bindings and componentstatuses VIRTUAL);
# CustomResourceDefinitions and APIServices are their servers' (``proxy.apiextensions``,
# ``proxy.aggregator``), custom resources are added and removed at run time, and alpha
# and beta versions are off by default in kube-apiserver.

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

# Subresources served (the catalogue lists more)
# (pods/eviction: proxy.kube.eviction; certificatesigningrequests/approval: its strategy;
# log, exec, attach, portforward, nodes/proxy: the kubelet's, proxied; pods/proxy,
# services/proxy: to pod IPs)
SERVED_SUBRESOURCES = frozenset({"status", "scale", "binding", "finalize", "eviction",
                                 "approval", "log", "exec", "attach", "portforward", "proxy",
                                 "ephemeralcontainers"})  # fmt: skip
# served with the secure port only, where service-account tokens are issued
# (serviceaccounts/token: proxy.kube.auth_routes)
SECURE_SUBRESOURCES = frozenset({"token"})
# the connect subresources (rest.Connecter storages, served by proxying) that the
# catalogue does not list: it models only the subresources that have a kind of their own
CONNECT_SUBRESOURCES: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "pods"): ("attach", "exec", "portforward", "proxy"),
    ("", "nodes"): ("proxy",),
    ("", "services"): ("proxy",),
}

# What discovery says of kube's subresources whose kind or verbs are not "the parent's
# kind; get, patch, update" (upstream: each subresource storage's New() and the REST
# interfaces it implements). (plural, subresource) first, then the subresource alone.
_SUB_KIND: dict[str, tuple[str, str, str]] = {
    "scale": ("autoscaling", "v1", "Scale"),
    "eviction": ("policy", "v1", "Eviction"),
    "binding": ("", "v1", "Binding"),
    "exec": ("", "v1", "PodExecOptions"),
    "attach": ("", "v1", "PodAttachOptions"),
    "portforward": ("", "v1", "PodPortForwardOptions"),
    "proxy": ("", "v1", "PodProxyOptions"),
    "token": ("authentication.k8s.io", "v1", "TokenRequest"),
}
_OWN_SUB_KIND: dict[tuple[str, str], tuple[str, str, str]] = {
    ("nodes", "proxy"): ("", "v1", "NodeProxyOptions"),
    ("services", "proxy"): ("", "v1", "ServiceProxyOptions"),
}
_SUB_VERBS: dict[str, tuple[str, ...]] = {
    "eviction": ("create",),
    "binding": ("create",),
    "finalize": ("update",),
    "log": ("get",),
    "exec": ("create", "get"),
    "attach": ("create", "get"),
    "portforward": ("create", "get"),
    "proxy": ("create", "delete", "get", "patch", "update"),
    "token": ("create",),
}


def subresource_facts(plural: str, sub: str) -> SubresourceInfo:
    """What discovery says of kube's ``plural``/``sub``."""
    kind = _OWN_SUB_KIND.get((plural, sub)) or _SUB_KIND.get(sub)
    return SubresourceInfo(kind, _SUB_VERBS.get(sub, DEFAULT_SUBRESOURCE_VERBS))


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


def declared(
    info: ResourceInfo, subresources: frozenset[str] = SERVED_SUBRESOURCES
) -> ResourceInfo:
    """The catalogue's ``info`` as kube's REST storage of it declares it: short names,
    categories, create-on-update, the subresources served (of ``subresources``), a
    storage or none."""
    key = (info.group, info.version, info.plural)
    every = (*info.subresources, *CONNECT_SUBRESOURCES.get((info.group, info.plural), ()))
    virtual = key in VIRTUAL
    served = tuple(sorted(s for s in every if s in subresources))
    return dataclasses.replace(
        info,
        subresources=served,
        subresource_facts=tuple((s, subresource_facts(info.plural, s)) for s in served),
        verbs=_VIRTUAL_VERBS.get(info.plural, info.verbs) if virtual else info.verbs,
        short_names=SHORT_NAMES.get(info.plural, ()),
        categories=CATEGORIES.get(info.plural, ()),
        create_on_update=info.plural in CREATE_ON_UPDATE,
        has_storage=not virtual and info.group not in REVIEW_GROUPS,
    )


def kube_resources(
    served: Iterable[tuple[str, str, str]] = SERVED,
    catalogue: Iterable[ResourceInfo] | None = None,
    *,
    secure: bool = False,
) -> list[ResourceInfo]:
    """``served`` (group, version, plural) keys, each as kube declares it (``secure``:
    with the subresources served where authentication exists); a name missing from the
    catalogue is an error."""
    entries = tuple(catalogue) if catalogue is not None else None
    subresources = SERVED_SUBRESOURCES | (SECURE_SUBRESOURCES if secure else frozenset())
    return [declared(catalogued(*key, catalogue=entries), subresources) for key in served]


def build_registry(
    served: Iterable[tuple[str, str, str]] = SERVED,
    catalogue: Iterable[ResourceInfo] | None = None,
) -> Registry:
    """A Registry of kube's ``served`` resources alone (tests, and kube's own callers;
    the server's holds the CRD's and APIService's too, ``proxy.app``)."""
    registry = Registry()
    for info in kube_resources(served, catalogue):
        registry.add(info)
    return registry
