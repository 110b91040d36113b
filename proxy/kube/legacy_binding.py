"""``POST /api/v1/namespaces/NS/bindings`` (kube-apiserver's ``LegacyBindingREST``): the
pods' binding storage under a resource of its own, the pod being the one the Binding
names. ``bindings`` has no storage of its own, so it is served as a delegate of the
generic handlers: its route's scope is the ``pods/binding`` one (admitted, as upstream
admits it, as a create of the pod's binding)."""

from __future__ import annotations

from proxy.endpoints.handlers.scope import RequestScope
from proxy.registry.resources import ResourceInfo
from proxy.server.context import APIContext

__all__ = ["LegacyBindings"]


class LegacyBindings:
    """The delegate that serves ``bindings`` with the pods' binding storage."""

    def __init__(self, ctx: APIContext) -> None:
        self.ctx = ctx

    def scope(self, resource: ResourceInfo, subresource: str) -> RequestScope | None:
        if (resource.group, resource.plural, subresource) != ("", "bindings", ""):
            return None
        pods = self.ctx.registry.get("", "v1", "pods")
        if pods is None:
            return None
        store = self.ctx.store(pods)
        storage = self.ctx.subresource_storages(pods, "binding", store)
        if storage is None:
            return None
        return RequestScope(pods, "binding", store, storage)
