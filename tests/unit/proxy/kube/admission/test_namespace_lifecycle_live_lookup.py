"""NamespaceLifecycle looks a namespace up live after admitting its DELETE, as
upstream's ``forceLiveLookupCache``: a create sent right after the DELETE's answer is
refused even while the watch cache still shows the namespace Active (make test caught
one slipping in: 201 where kube answers 403)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from proxy import apierrors
from proxy.admission.attributes import Attributes
from proxy.admission.interfaces import PluginDeps
from proxy.kube.admission import namespace_lifecycle
from proxy.kube.admission.namespace_lifecycle import NamespaceLifecycle
from proxy.kube.resources import build_registry

_ACTIVE = {"metadata": {"name": "ending"}, "status": {"phase": "Active"}}
_TERMINATING = {"metadata": {"name": "ending", "deletionTimestamp": "2026-12-02T12:00:00Z"},
                "status": {"phase": "Terminating"}}  # fmt: skip


class _Lookup:
    """The namespace as a watch cache a moment behind shows it, and as etcd has it."""

    def __init__(self) -> None:
        self.fresh_reads = 0

    async def get(self, group: str, plural: str, namespace: str, name: str, *,
                  fresh: bool = False) -> dict[str, Any]:  # fmt: skip
        self.fresh_reads += fresh
        return _TERMINATING if fresh else _ACTIVE


def _attrs(plural: str, operation: str, namespace: str, name: str) -> Attributes:
    resource = build_registry().get("", "v1", plural)
    assert resource is not None
    return Attributes(resource=resource, operation=operation, namespace=namespace, name=name,
                      object={} if operation == "CREATE" else None)  # fmt: skip


def _create(plugin: NamespaceLifecycle) -> None:
    asyncio.run(plugin.admit(_attrs("configmaps", "CREATE", "ending", "late")))


def test_a_create_after_the_namespaces_delete_reads_it_live() -> None:
    lookup = _Lookup()
    plugin = NamespaceLifecycle(PluginDeps(lookup=cast(Any, lookup)))
    _create(plugin)  # no DELETE admitted: the cache's Active is believed
    assert lookup.fresh_reads == 0
    asyncio.run(plugin.admit(_attrs("namespaces", "DELETE", "", "ending")))
    with pytest.raises(apierrors.StatusError) as err:
        _create(plugin)
    assert lookup.fresh_reads == 1
    assert err.value.body["message"] == ('configmaps "late" is forbidden: unable to create '
                                         "new content in namespace ending because it is "
                                         "being terminated")  # fmt: skip


def test_the_live_lookup_ends_after_its_ttl(monkeypatch: pytest.MonkeyPatch) -> None:
    lookup = _Lookup()
    plugin = NamespaceLifecycle(PluginDeps(lookup=cast(Any, lookup)))
    monkeypatch.setattr(namespace_lifecycle, "FORCE_LIVE_LOOKUP_TTL", -1.0)
    asyncio.run(plugin.admit(_attrs("namespaces", "DELETE", "", "ending")))
    _create(plugin)
    assert lookup.fresh_reads == 0
