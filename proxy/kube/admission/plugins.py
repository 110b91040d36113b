"""kube's admission plugins, registered explicitly (upstream's ``pkg/kubeapiserver/options/
plugins.go`` ``RegisterAllAdmissionPlugins``); the composition root calls it with the
table the generic server's plugins are registered in too."""

from __future__ import annotations

from proxy.admission.plugins import Plugins
from proxy.kube.admission.always import AlwaysAdmit, AlwaysDeny
from proxy.kube.admission.certificates import (
    CertificateApproval,
    CertificateSigning,
    CertificateSubjectRestriction,
)
from proxy.kube.admission.default_toleration_seconds import DefaultTolerationSeconds
from proxy.kube.admission.limit_ranger import LimitRanger
from proxy.kube.admission.namespace_lifecycle import NamespaceLifecycle
from proxy.kube.admission.pod_security.plugin import PodSecurity
from proxy.kube.admission.priority import Priority
from proxy.kube.admission.resource_quota import ResourceQuota
from proxy.kube.admission.service_account import ServiceAccount

__all__ = ["register_all_admission_plugins"]


def register_all_admission_plugins(plugins: Plugins) -> None:
    for plugin in (
        AlwaysAdmit,
        AlwaysDeny,
        NamespaceLifecycle,
        LimitRanger,
        ServiceAccount,
        PodSecurity,
        Priority,
        DefaultTolerationSeconds,
        CertificateApproval,
        CertificateSigning,
        CertificateSubjectRestriction,
        ResourceQuota,
    ):
        plugins.register(plugin.name, plugin)
