"""Pure helpers: merge patch, list options, settings, object meta rules."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from proxy import apierrors
from proxy.endpoints.handlers.patcher import merge_patch
from proxy.kube.prepare import pod_qos_class
from proxy.kube.resources import build_registry
from proxy.registry import object_meta
from proxy.registry.rest import Context
from proxy.registry.strategy import GenericStrategy, StatusStrategy
from proxy.request.list_options import (
    ListQuery,
    parse_list_query,
    validate_list_query,
    watch_timeout,
)
from proxy.server.settings import ConfigError, load_settings


def test_merge_patch_rfc7386_examples() -> None:
    assert merge_patch({"a": "b"}, {"a": "c"}) == {"a": "c"}
    assert merge_patch({"a": "b"}, {"b": "c"}) == {"a": "b", "b": "c"}
    assert merge_patch({"a": "b"}, {"a": None}) == {}
    assert merge_patch({"a": [{"b": "c"}]}, {"a": [1]}) == {"a": [1]}
    assert merge_patch({"e": None}, {"a": 1}) == {"e": None, "a": 1}
    assert merge_patch({}, {"a": {"bb": {"ccc": None}}}) == {"a": {"bb": {}}}


def test_watch_query_and_timeout() -> None:
    q = parse_list_query({"watch": "true", "timeoutSeconds": "5"})
    assert q.watch and q.timeout_seconds == 5
    assert watch_timeout(q, 1800.0) == 5.0
    rng = random.Random(1)
    default = watch_timeout(ListQuery(watch=True), 1800.0, rng)
    assert 1800.0 <= default < 3600.0


def test_watch_resource_version_match_must_be_not_older_than() -> None:
    q = ListQuery(watch=True, resource_version_match="Exact", send_initial_events=True)
    with pytest.raises(apierrors.StatusError) as e:
        validate_list_query(q)
    assert e.value.message == (
        'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: '
        "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, "
        'resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan"]'
    )
    validate_list_query(
        ListQuery(watch=True, resource_version_match="NotOlderThan", send_initial_events=True)
    )


def test_settings_precedence(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("etcd-servers: [http://a:1, http://b:2]\nport: 9000\nwatch-cache: true\n")
    s = load_settings([f"--config={cfg}", "--port=9100", "--etcd-request-timeout=2500ms"])
    assert load_settings(["--etcd-servers=x", "--watch-cache"]).watch_cache is True
    assert s.etcd_servers == ("http://a:1", "http://b:2")
    assert s.port == 9100 and s.watch_cache is True and s.etcd_request_timeout == 2.5
    with pytest.raises(ConfigError):
        load_settings([])
    with pytest.raises(ConfigError):
        load_settings(["--etcd-servers=x", "--watch-cache=maybe"])


def test_defaults_file_is_loadable() -> None:
    defaults = Path(__file__).resolve().parents[3] / "config" / "defaults.yaml"
    s = load_settings([f"--config={defaults}"])
    assert s.etcd_prefix == "/registry" and s.etcd_request_timeout == 10.0


def test_prepare_for_update_keeps_system_fields_and_bumps_generation() -> None:
    deploy = build_registry().lookup("apps", "deployments")
    assert deploy is not None
    old = {
        "metadata": {"name": "d", "uid": "u1", "creationTimestamp": "t0", "generation": 3},
        "spec": {"replicas": 1},
        "status": {"ready": 1},
    }
    new = {"metadata": {"name": "d", "creationTimestamp": "t9"}, "spec": {"replicas": 2}}
    out = GenericStrategy(deploy).prepare_for_update(Context(), new, old)
    assert out["metadata"]["uid"] == "u1" and out["metadata"]["creationTimestamp"] == "t0"
    assert out["metadata"]["generation"] == 4
    assert out["status"] == {"ready": 1}  # the main resource ignores status
    st = StatusStrategy(deploy, "status").prepare_for_update(
        Context(),
        {"metadata": {"name": "d"}, "spec": {"replicas": 9}, "status": {"ready": 2}},
        old,
    )
    assert st["spec"] == {"replicas": 1} and st["status"] == {"ready": 2}
    assert st["metadata"]["generation"] == 3


def test_generate_name() -> None:
    name = object_meta.generate_name("x" * 80)
    assert len(name) == 63 and name.startswith("x" * 58)


def test_watch_cache_settings(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "etcd-servers: http://a:1\n"
        "feature-gates: {ConsistentListFromCache: true}\n"
        "watchCache: {indexes: {configmaps: [metadata.namespace]}}\n"
    )
    s = load_settings(
        [f"--config={cfg}", "--default-watch-cache-size=50", "--watch-cache-index=false"]
    )
    assert s.watch_cache is True and s.default_watch_cache_size == 50
    assert s.watch_cache_index is False
    assert s.feature_gates == {"ConsistentListFromCache": True}
    assert s.watch_cache_indexes == {"configmaps": ("metadata.namespace",)}
    flags = load_settings(
        ["--etcd-servers=x", "--feature-gates=A=true,B=false", "--etcd-compaction-interval=0"]
    )
    assert flags.feature_gates == {"A": True, "B": False} and flags.etcd_compaction_interval == 0
    with pytest.raises(ConfigError):
        load_settings(["--etcd-servers=x", "--feature-gates=A"])


@pytest.mark.parametrize(
    ("resources", "qos"),
    [
        ({}, "BestEffort"),
        ({"requests": {"cpu": "1"}}, "Burstable"),
        ({"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
        (
            {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}},
            "Burstable",
        ),
    ],
)
def test_pod_qos_class(resources: dict[str, object], qos: str) -> None:
    pod = {"spec": {"containers": [{"name": "c", "resources": resources}]}}
    assert pod_qos_class(pod) == qos
