"""Imports every built-in plugin module, each of which registers its plugin(s) with
``proxy.admission.chain.register``."""

from __future__ import annotations

from proxy.admission import always, namespace_lifecycle, resource_quota
from proxy.admission.pod_security import plugin as pod_security
from proxy.admission.policy import validating as validating_policy
from proxy.admission.webhook import dispatcher

__all__ = ["always", "dispatcher", "namespace_lifecycle", "pod_security", "resource_quota",
           "validating_policy"]
