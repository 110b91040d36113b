"""Imports every built-in plugin module, each of which registers its plugin(s) with
``proxy.admission.chain.register``."""

from __future__ import annotations

from proxy.admission import always, namespace_lifecycle

__all__ = ["always", "namespace_lifecycle"]
