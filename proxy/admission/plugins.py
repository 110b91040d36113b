"""Imports every built-in plugin module, each of which registers its plugin(s) with
``proxy.admission.chain.register``."""

from __future__ import annotations

from proxy.admission import (
    always,
    default_toleration_seconds,
    limit_ranger,
    namespace_lifecycle,
    priority,
    resource_quota,
    service_account,
)
from proxy.admission.pod_security import plugin as pod_security
from proxy.admission.policy import mutating as mutating_policy
from proxy.admission.policy import validating as validating_policy
from proxy.admission.webhook import dispatcher

__all__ = ["always", "default_toleration_seconds", "dispatcher", "limit_ranger",
           "mutating_policy", "namespace_lifecycle",
           "pod_security", "priority", "resource_quota", "service_account", "validating_policy"]
