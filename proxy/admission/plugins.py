"""The admission plugins a server can build, by name (upstream's ``admission.Plugins``).

Nothing registers itself on import: whoever builds the server fills a :class:`Plugins`
explicitly, as upstream's ``RegisterAllAdmissionPlugins`` functions do — the generic
server's (webhooks and policies, ``proxy.server.admission_plugins``) and kube's
built-in ones (``proxy.kube.admission.plugins``) — and the chain is built from it.
"""

from __future__ import annotations

from collections.abc import Callable

from proxy.admission.interfaces import Plugin, PluginDeps

__all__ = ["Factory", "Plugins"]

Factory = Callable[[PluginDeps], Plugin]


class Plugins:
    """Plugin factories by name; filled before the chain is built, then only read."""

    def __init__(self) -> None:
        self._factories: dict[str, Factory] = {}

    def register(self, name: str, factory: Factory) -> None:
        """Make ``name`` buildable (a second registration of a name replaces the first)."""
        self._factories[name] = factory

    def registered(self) -> frozenset[str]:
        return frozenset(self._factories)

    def new(self, name: str, deps: PluginDeps) -> Plugin:
        """A new instance of the plugin registered as ``name`` (KeyError if none)."""
        return self._factories[name](deps)
