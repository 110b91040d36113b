"""Pure helpers behind the real-kubectl fixes: DeleteOptions parsing, the Scale view,
Secret defaults, nesting and alias limits of bodies, Go quoting, and the system
namespaces' retry loop (with a fake store)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from multidict import MultiDict

from proxy import apierrors
from proxy.endpoints import negotiation
from proxy.endpoints.handlers.delete_options import parse_delete_options
from proxy.kube.bootstrap.system_namespaces import SYSTEM_NAMESPACES, SystemNamespaces
from proxy.registry import object_meta, scale
from proxy.registry.resources import build_registry
from proxy.request.delete_options import DeleteOptions
from storage import errors as serr
from storage.interfaces import Preconditions, StoredObject


def test_delete_options_body_wins_over_the_query() -> None:
    body = b'{"kind":"DeleteOptions","dryRun":["All"],"preconditions":{"uid":"u"}}'
    opts = parse_delete_options(MultiDict(gracePeriodSeconds="x"), body, "application/json")
    assert opts == DeleteOptions(preconditions=Preconditions(uid="u"), dry_run=True)
    query = MultiDict([("dryRun", "All"), ("gracePeriodSeconds", "5")])
    opts = parse_delete_options(query, b"", "")
    assert (opts.dry_run, opts.grace_period_seconds) == (True, 5)
    yaml_body = b"propagationPolicy: Foreground\n"
    assert parse_delete_options(MultiDict(), yaml_body, "application/yaml").propagation_policy == (
        "Foreground"
    )


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b'{"dryRun":"All"}', 400),
        (b'{"gracePeriodSeconds":true}', 400),
        (b'{"orphanDependents":1}', 400),
        (b"[1]", 400),
        (b'{"propagationPolicy":"Later"}', 422),
        (b'{"dryRun":["None"]}', 422),
    ],
)
def test_delete_options_errors(body: bytes, code: int) -> None:
    with pytest.raises(apierrors.StatusError) as err:
        parse_delete_options(MultiDict(), body, "application/json")
    assert err.value.code == code


def test_scale_view_of_a_deployment() -> None:
    deployment = {
        "metadata": {"name": "d", "namespace": "n", "uid": "u", "resourceVersion": "7",
                     "labels": {"x": "y"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "d", "tier": "web"}}},
        "status": {"replicas": 1},
    }  # fmt: skip
    assert scale.from_object(deployment) == {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {"name": "d", "namespace": "n", "uid": "u", "resourceVersion": "7"},
        "spec": {"replicas": 2},
        "status": {"replicas": 1, "selector": "app=d,tier=web"},
    }
    assert scale.from_object({"metadata": {}, "spec": {"replicas": 0}})["spec"] == {}


def test_secret_string_data_merges_into_data() -> None:
    secret: dict[str, Any] = {"data": {"a": "eA==", "b": "eQ=="}, "stringData": {"b": "z"}}
    object_meta.secret_defaults(secret)
    assert secret == {"data": {"a": "eA==", "b": "eg=="}, "type": "Opaque"}
    typed: dict[str, Any] = {"type": "kubernetes.io/tls"}
    object_meta.secret_defaults(typed)
    assert typed == {"type": "kubernetes.io/tls"}


def test_nesting_and_alias_limits() -> None:
    nested: Any = 1
    for _ in range(negotiation.MAX_DEPTH):
        nested = {"a": nested}
    assert not negotiation.too_deep(nested)
    assert negotiation.too_deep({"a": nested})
    shared = ["x"] * 10
    bomb = [shared] * 10
    assert negotiation._expanded_size([bomb] * 10) == 1 + 10 * (1 + 10 * 11)
    with pytest.raises(ValueError, match="exceeded max depth"):
        negotiation.decode_structured(b"[" * 300 + b"]" * 300, negotiation.JSON_TYPE)


def test_go_quote_escapes_like_percent_q() -> None:
    assert apierrors._go_quote('a\x07"\\\n\u0085é') == '"a\\a\\"\\\\\\n\\u0085é"'
    assert apierrors._go_quote(5) == "5"


@dataclass
class _FakeStore:
    fail_first: int
    created: list[str] = field(default_factory=list)
    calls: int = 0

    async def create(self, key: str, obj: dict[str, Any]) -> StoredObject:
        self.calls += 1
        if self.calls <= self.fail_first:
            raise serr.Unavailable("etcd is down")
        if obj["metadata"]["name"] == "default" and "default" in self.created:
            raise serr.AlreadyExists(key)
        self.created.append(obj["metadata"]["name"])
        return StoredObject(key, b"{}", 1)


@dataclass
class _FakeResourceStorage:
    store: _FakeStore

    def object_key(self, namespace: str, name: str) -> str:
        return f"/namespaces/{name}"


@dataclass
class _FakeStorages:
    rs: _FakeResourceStorage

    def for_resource(self, resource: object) -> _FakeResourceStorage:
        return self.rs


async def test_system_namespaces_retry_until_created() -> None:
    store = _FakeStore(fail_first=2, created=["default"])
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    creator = SystemNamespaces(
        build_registry(),
        _FakeStorages(_FakeResourceStorage(store)),
        sleep=sleep,
    )
    await creator.run()
    assert creator.ready.is_set()
    assert sleeps == [1.0, 1.0]
    assert store.created == ["default", *SYSTEM_NAMESPACES[1:]]
