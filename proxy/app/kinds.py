"""What the composition root registers with the generic server library before it
builds a server: the resources it serves, the validation rules and Table printers of
kube's built-in kinds and of APIService, and the admission plugins it can run (the CRD's and custom
resources' strategies and printers are registered by the apiextensions server)."""

from __future__ import annotations

from proxy.admission.plugins import Plugins
from proxy.aggregator import printers as apiservice_printers
from proxy.aggregator import validation as apiservice_validation
from proxy.aggregator.apiservice import GROUP as APISERVICE_GROUP
from proxy.aggregator.validation import apiservice_resource
from proxy.apiextensions import crd_strategy
from proxy.apiextensions.crd_strategy import CRD_GROUP, CRD_PLURAL, crd_resource
from proxy.kube.admission.plugins import (
    register_all_admission_plugins as register_kube_admission_plugins,
)
from proxy.kube.printers import register_builtin_printers
from proxy.kube.resources import REVIEWS, SERVED, VIRTUAL, kube_resources
from proxy.kube.scheme import register_kube_scheme
from proxy.kube.validation.strategies import BUILTIN_STRATEGIES
from proxy.printers.handlers import register_printers
from proxy.registry.deletion import DeletionRules
from proxy.registry.resources import Registry
from proxy.registry.validation.strategy import KindStrategy
from proxy.server.admission_plugins import (
    register_all_admission_plugins as register_generic_admission_plugins,
)

__all__ = [
    "admission_plugins",
    "deletion_rules",
    "kind_rules",
    "register_kinds",
    "served_resources",
]


def served_resources(secure: bool) -> Registry:
    """Every resource this server serves: kube's built-in ones, CRDs, APIServices, then
    kube's virtual ones and, with a secure port (where authentication and authorization
    exist), the review APIs and ``serviceaccounts/token``. Discovery lists groups in this order."""
    registry = Registry()
    resources = [
        *kube_resources(SERVED, secure=secure),
        crd_resource(),
        apiservice_resource(),
        *kube_resources(VIRTUAL + (REVIEWS if secure else ())),
    ]
    for info in resources:
        registry.add(info)
    return registry


def kind_rules() -> dict[tuple[str, str], KindStrategy]:
    """(group, kind) -> validation of every kind served through the generic handlers
    with the built-in strategies: kube's, APIService's and the CRD's (a custom
    resource's comes from its CRD's serving object)."""
    return {
        **BUILTIN_STRATEGIES,
        (APISERVICE_GROUP, "APIService"): apiservice_validation.STRATEGY,
        (CRD_GROUP, "CustomResourceDefinition"): crd_strategy.STRATEGY,
    }


def deletion_rules() -> dict[tuple[str, str], DeletionRules]:
    """(group, plural) -> what a DELETE of the kinds served here beside kube's adds (the
    CRD's cleanup finalizer; kube's own kinds' are kube's strategies')."""
    return {(CRD_GROUP, CRD_PLURAL): crd_strategy.DELETION}


def register_kinds() -> None:
    """Printers of the built-in kinds and APIService, kube's groups in the request
    decoder's scheme (idempotent: every server built in one process registers the same
    objects)."""
    register_builtin_printers()
    register_printers(APISERVICE_GROUP, apiservice_printers.HANDLERS)
    register_kube_scheme()


def admission_plugins() -> Plugins:
    """Every admission plugin this server can run: the generic server's and kube's
    (upstream's two ``RegisterAllAdmissionPlugins``)."""
    plugins = Plugins()
    register_generic_admission_plugins(plugins)
    register_kube_admission_plugins(plugins)
    return plugins
