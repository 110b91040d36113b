"""The seed data set (pure generators) and the benchmark's report functions (pure)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import orjson
import pytest

from lab import bench_report, seed
from lab.kubeconfig import kubeconfig


def test_pods_are_realistic_and_spread() -> None:
    pods = [seed.pod(i, nodes=5, namespaces=3) for i in range(30)]
    sizes = [len(orjson.dumps(p)) for p in pods]
    assert all(2048 <= s <= 4096 for s in sizes), sizes
    assert {p["spec"]["nodeName"] for p in pods} == {seed.node_name(i) for i in range(5)}
    assert {p["metadata"]["namespace"] for p in pods} == {"default", "team-01", "team-02"}
    assert len({p["metadata"]["name"] for p in pods}) == 30
    p = pods[7]
    assert {"app", "tier"} <= set(p["metadata"]["labels"])
    assert p["metadata"]["managedFields"] and p["spec"]["tolerations"] and p["spec"]["volumes"]
    c = p["spec"]["containers"][0]
    assert c["resources"]["requests"] and c["resources"]["limits"]
    st = p["status"]
    assert st["podIP"] and st["hostIP"] and st["conditions"] and st["containerStatuses"]


def test_pod_names_are_unique() -> None:
    names = {seed.pod_name(i) for i in range(200_000)}
    assert len(names) == 200_000


def test_generators_are_deterministic() -> None:
    assert seed.pod(42, 7, 3) == seed.pod(42, 7, 3)
    assert seed.node(3)["status"]["capacity"]["pods"] == "110"
    assert seed.configmap(5, 3)["metadata"]["namespace"] == seed.namespace_name(5 % 3)


def test_plan_orders_namespaces_first_and_extends() -> None:
    items = list(seed.Plan(pods=10, nodes=2, namespaces=3, configmaps=4))
    assert [i.resource for i in items[:3]] == ["namespaces"] * 3
    assert len(items) == len(seed.Plan(10, 2, 3, 4)) == 3 + 2 + 4 + 10
    pods = [i for i in items if i.resource == "pods"]
    assert pods[0].path == "/api/v1/namespaces/default/pods"
    more = [i for i in seed.Plan(15, 2, 3, pods_from=10) if i.resource == "pods"]
    assert [i.body["metadata"]["name"] for i in more] == [seed.pod_name(i) for i in range(10, 15)]
    with pytest.raises(ValueError):
        seed.Plan(pods=5, nodes=0, namespaces=1)


def test_kubeconfig_points_at_server() -> None:
    import yaml

    doc = yaml.safe_load(kubeconfig("http://127.0.0.1:9999"))
    assert doc["clusters"][0]["cluster"]["server"] == "http://127.0.0.1:9999"
    assert doc["current-context"] == doc["contexts"][0]["name"]


def _raw(p50s: dict[str, float]) -> dict[str, Any]:
    samples = {}
    for name, secs in p50s.items():
        samples[name] = [
            {"seconds": secs, "nbytes": 100, "status": 200, "requests": 1, "served_from": "cache",
             "fetched": 10, "returned": 1, "items": 1, "cpu": {"server": 0.001}, "warmup": w}
            for w in (True, False, False)
        ]
    return {"samples": samples, "peak_rss": {"server": 2**20}}


def test_report_targets_and_rendering(tmp_path: Path) -> None:
    p50 = {"list_etcd": 1.0, "list_cache": 0.04, "floor_bytes": 0.03, "floor_etcd_range": 0.5,
           "field_etcd": 0.5, "field_cache_indexed": 0.001}
    serving = dict.fromkeys(p50, "server")
    stats = bench_report.summarize(_raw(p50), serving, {"field_cache_noindex": "no flag"})
    by = {t.name: t for t in bench_report.targets(stats)}
    assert by["rv0_speedup"].measured == pytest.approx(25) and by["rv0_speedup"].met
    assert by["index_speedup"].met is True
    assert by["cache_vs_bytes_floor"].met is True
    assert by["etcd_vs_range_floor"].met is True
    noindex = next(s for s in stats if s.name == "field_cache_noindex")
    assert not noindex.available and math.isnan(noindex.p50)
    run = {"pods": 10, "scenarios": bench_report.stats_dicts(stats),
           "targets": bench_report.target_dicts(bench_report.targets(stats))}
    results = {"meta": {"machine": "m", "date": "d", "etcd_version": "3.5.1",
                        "etcd_binary": "etcd", "etcd_members": 1, "pods": 10, "nodes": 1,
                        "runs": 2, "warmup": 1, "python": "3.11", "elapsed_s": 1.0,
                        "pod_bytes_in_etcd": 1, "notes": ["a note"]},
               "sweep": False, "runs": [run]}
    md = bench_report.markdown(results)
    assert "RV=0 LIST >= 20x" in md and "| met |" in md and "n/a: no flag" in md
    written = bench_report.charts(results, tmp_path)
    assert all(p.stat().st_size > 1000 for p in written) and len(written) == 3


def test_loop_lag_from_histogram_buckets() -> None:
    """Per scenario, the ticker's bucket changes add up over the runs; p99 interpolates
    within a bucket as Prometheus does; max is the bound of the highest bucket reached."""
    calm = [("0.001", 90.0), ("0.01", 98.0), ("0.1", 100.0), ("+Inf", 100.0)]
    idle = [("0.001", 0.0), ("0.01", 0.0), ("0.1", 0.0), ("+Inf", 0.0)]
    buckets = bench_report.merge_buckets([{"lag_buckets": calm}, {"lag_buckets": idle}, {}])
    assert buckets == [(0.001, 90.0), (0.01, 98.0), (0.1, 100.0), (math.inf, 100.0)]
    assert bench_report.bucket_quantile(buckets, 0.99) == pytest.approx(0.055)
    assert bench_report.bucket_quantile(buckets, 0.5) == pytest.approx(0.001 * 50 / 90)
    assert bench_report.bucket_max(buckets) == 0.1
    stalled = [(0.1, 0.0), (60.0, 1.0), (math.inf, 2.0)]  # one tick late beyond 60 s
    assert bench_report.bucket_quantile(stalled, 0.99) == 60.0
    assert bench_report.bucket_max(stalled) == math.inf
    assert math.isnan(bench_report.bucket_quantile([], 0.99))

    raw = _raw({"yaml_cache": 2.0})
    for sample in raw["samples"]["yaml_cache"]:
        sample["lag_buckets"], sample["readyz"] = calm, [0.002, 0.004, 0.003]
    (stats,) = bench_report.summarize(raw, {"yaml_cache": "server"})
    assert stats.lag_ticks == 200 and stats.lag_p99 == pytest.approx(0.055)
    assert stats.readyz_p50 == pytest.approx(0.003) and stats.readyz_max == 0.004
    run = {"pods": 1, "scenarios": bench_report.stats_dicts([stats]), "targets": []}
    md = "\n".join(bench_report._run_markdown(run))
    assert "| yaml_cache | 200 | 55.0 | 100.0 | 3.00 | 4.00 |" in md


def test_percentile() -> None:
    assert bench_report.percentile([1, 2, 3, 4], 50) == 2.5
    assert bench_report.percentile([5], 99) == 5
    assert math.isnan(bench_report.percentile([], 50))


def test_metrics_scrape_sums_matching_series() -> None:
    from lab.metrics import parse

    before = parse('# TYPE apiserver_cache_list_fetched_objects counter\n'
                   'apiserver_cache_list_fetched_objects_total{resource="pods",index=""} 5\n')
    after = parse('# TYPE apiserver_cache_list_fetched_objects counter\n'
                  'apiserver_cache_list_fetched_objects_total{resource="pods",index=""} 9\n'
                  'apiserver_cache_list_fetched_objects_total'
                  '{resource="pods",index="spec.nodeName"} 3\n')
    name = "apiserver_cache_list_fetched_objects_total"
    assert after.since(before, name, resource="pods") == 7
    assert after.since(before, name, resource="pods", index="spec.nodeName") == 3
    assert after.value(name, resource="nodes") == 0 and after.has(name)


def test_small_pods_are_half_the_default_and_deterministic() -> None:
    small = [seed.pod(i, nodes=5, namespaces=3, size="small") for i in range(30)]
    sizes = [len(orjson.dumps(p)) for p in small]
    default = [len(orjson.dumps(seed.pod(i, 5, 3))) for i in range(30)]
    assert all(s < d / 2 for s, d in zip(sizes, default, strict=True)), (sizes, default)
    assert small[4] == seed.pod(4, 5, 3, "small")
    assert {p["spec"]["nodeName"] for p in small} == {seed.node_name(i) for i in range(5)}
    plan = seed.Plan(pods=4, nodes=2, namespaces=1, pod_size="small")
    assert [i.body for i in plan.pod_items()] == [seed.pod(i, 2, 1, "small") for i in range(4)]
