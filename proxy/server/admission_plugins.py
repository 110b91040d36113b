"""The admission plugins of the generic server (upstream's ``k8s.io/apiserver/pkg/server/
plugins.go`` ``RegisterAllAdmissionPlugins``): the webhooks and the CEL policies, which
work for any kind."""

from __future__ import annotations

from proxy.admission.plugins import Plugins
from proxy.admission.policy.mutating import MutatingAdmissionPolicy
from proxy.admission.policy.validating import ValidatingAdmissionPolicy
from proxy.admission.webhook.dispatcher import MutatingWebhook, ValidatingWebhook

__all__ = ["register_all_admission_plugins"]


def register_all_admission_plugins(plugins: Plugins) -> None:
    for plugin in (
        MutatingAdmissionPolicy,
        ValidatingAdmissionPolicy,
        MutatingWebhook,
        ValidatingWebhook,
    ):
        plugins.register(plugin.name, plugin)
