"""Two of kube-controller-manager's per-namespace controllers: every active namespace
gets a ``default`` ServiceAccount (the serviceaccounts controller) and a
``kube-root-ca.crt`` ConfigMap holding the cluster's root CA (the root CA publisher,
``pkg/controller/certificates/rootcacertpublisher``), so ``kubectl create token default``
and a pod's projected service-account volume find what they expect.

Both watch the namespaces (shared informer) and only the one object they keep per
namespace (a ``metadata.name`` field selector: the lab's thousands of ConfigMaps stay
out of their caches). A namespace's creation, or the deletion or change of the object,
queues the namespace; the sync creates the object when it is missing, and the publisher
also puts back ``data`` and the description annotation when they differ. A namespace
being deleted is left alone (its objects are going away). Each has one worker, as
their upstream default of concurrent syncs is small, and a new namespace is served
within a second (one watch event, one POST).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from lab.sim.client import JSON, APIError, Client
from lab.sim.informer import Informer, WorkQueue, key_of, run_workers

__all__ = ["ROOT_CA_CONFIGMAP", "RootCACertPublisher", "ServiceAccountsController"]

log = logging.getLogger("watchcache.sim")

DEFAULT_SERVICE_ACCOUNT = "default"
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
DESCRIPTION = "kubernetes.io/description"
DESCRIPTION_TEXT = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using "
    "internal endpoints such as the internal service IP or kubernetes.default.svc. No "
    "other usage is guaranteed across distributions of Kubernetes clusters."
)


class _PerNamespace:
    """One object named ``name`` in every active namespace: ``wanted(ns)`` is its body,
    ``list_method`` lists that kind (narrowed to the name), ``create``/``replace``
    write it."""

    def __init__(self, client: Client, namespaces: Informer, name: str,
                 list_method: Callable[..., Awaitable[Any]]) -> None:  # fmt: skip
        self.client = client
        self.namespaces = namespaces
        self.name = name
        self.objects = Informer(client, list_method, field_selector=f"metadata.name={name}",
                                name=f"{client.user_agent} {name}")  # fmt: skip
        self.queue: WorkQueue[str] = WorkQueue()
        self.created = 0

    async def run(self) -> None:
        self.namespaces.add_handler(lambda kind, ns, old: self.queue.add(key_of(ns))
                                    if kind != "DELETED" else None)  # fmt: skip
        self.objects.add_handler(lambda kind, obj, old: self.queue.add(
            str((obj.get("metadata") or {}).get("namespace"))))  # fmt: skip
        try:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(self.objects.run())
                await self.objects.synced.wait()  # never create from an empty cache
                tg.create_task(run_workers(self.client.user_agent, self.queue, self.sync, 1))
        finally:
            await self.client.close()

    async def sync(self, namespace: str) -> None:
        ns = self.namespaces.get(namespace)
        if ns is None or (ns.get("status") or {}).get("phase") == "Terminating" or (
                ns.get("metadata") or {}).get("deletionTimestamp"):  # fmt: skip
            return
        current = self.objects.get(f"{namespace}/{self.name}")
        wanted = self.wanted(namespace)
        try:
            if current is None:
                await self.create(namespace, wanted)
                self.created += 1
            elif self.differs(current, wanted):
                await self.replace(namespace, {**current, **self.fields(wanted)})
        except APIError as e:
            if e.status == 409 or (e.status == 403 and "terminat" in str(e).lower()):
                return  # created meanwhile (the watch brings it), or namespace going away
            raise

    def wanted(self, namespace: str) -> JSON:
        raise NotImplementedError

    def fields(self, wanted: JSON) -> JSON:
        """What a replace puts back (nothing but the name by default)."""
        return {}

    def differs(self, current: JSON, wanted: JSON) -> bool:
        return False

    async def create(self, namespace: str, body: JSON) -> None:
        raise NotImplementedError

    async def replace(self, namespace: str, body: JSON) -> None:
        raise NotImplementedError


class ServiceAccountsController(_PerNamespace):
    """A ``default`` ServiceAccount in every active namespace (recreated if deleted)."""

    def __init__(self, server: str, namespaces: Informer) -> None:
        client = Client(server, "service-account-controller")
        super().__init__(client, namespaces, DEFAULT_SERVICE_ACCOUNT,
                         client.core.list_service_account_for_all_namespaces)  # fmt: skip

    def wanted(self, namespace: str) -> JSON:
        return {"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": self.name, "namespace": namespace}}  # fmt: skip

    async def create(self, namespace: str, body: JSON) -> None:
        await self.client.call(self.client.core.create_namespaced_service_account, namespace,
                               body)  # fmt: skip


class RootCACertPublisher(_PerNamespace):
    """A ``kube-root-ca.crt`` ConfigMap holding ``root_ca`` (PEM) in every active
    namespace; a changed or deleted one is put back."""

    def __init__(self, server: str, namespaces: Informer, root_ca: str) -> None:
        client = Client(server, "root-ca-cert-publisher")
        super().__init__(client, namespaces, ROOT_CA_CONFIGMAP,
                         client.core.list_config_map_for_all_namespaces)  # fmt: skip
        self.root_ca = root_ca

    def wanted(self, namespace: str) -> JSON:
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": self.name, "namespace": namespace,
                             "annotations": {DESCRIPTION: DESCRIPTION_TEXT}},
                "data": {"ca.crt": self.root_ca}}  # fmt: skip

    def differs(self, current: JSON, wanted: JSON) -> bool:
        annotations = (current.get("metadata") or {}).get("annotations") or {}
        return current.get("data") != wanted["data"] or annotations.get(DESCRIPTION) != (
            DESCRIPTION_TEXT)  # fmt: skip

    def fields(self, wanted: JSON) -> JSON:
        return {"data": wanted["data"], "binaryData": None}

    async def create(self, namespace: str, body: JSON) -> None:
        await self.client.call(self.client.core.create_namespaced_config_map, namespace, body)

    async def replace(self, namespace: str, body: JSON) -> None:
        meta = dict(body.get("metadata") or {})
        meta["annotations"] = {**(meta.get("annotations") or {}), DESCRIPTION: DESCRIPTION_TEXT}
        body = {"apiVersion": "v1", "kind": "ConfigMap", **body, "metadata": meta}
        body = {k: v for k, v in body.items() if v is not None}
        with contextlib.suppress(APIError):  # 404/409: the next event brings it again
            await self.client.call(self.client.core.replace_namespaced_config_map,
                                   self.name, namespace, body)  # fmt: skip
