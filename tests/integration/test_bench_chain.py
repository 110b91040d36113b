"""``watchcache bench-chain --quick`` runs end to end on a real etcd: a baseline server
(AlwaysAllow, max-in-flight, no audit) and a full-chain one (RBAC, APF, audit), both
scenarios, a table and the JSON results."""

from __future__ import annotations

import json
from pathlib import Path

from lab import bench_auth, bench_chain
from lab.etcd import EtcdCluster


def test_bench_chain_quick(etcd: EtcdCluster, tmp_path: Path) -> None:
    out = tmp_path / "chain.json"
    rc = bench_chain.main(["--quick", f"--etcd-servers={','.join(etcd.endpoints)}",
                           f"--out={out}"])  # fmt: skip
    assert rc == 0
    results = json.loads(out.read_text())
    assert set(results) == set(bench_auth.SCENARIOS)
    for by_mode in results.values():
        assert set(by_mode) == {bench_chain.BASELINE, bench_chain.CHAIN}
        assert all(m["client_median_ms"] > 0 for m in by_mode.values())


def test_bench_chain_audit_cost_compares_the_chain_with_and_without_audit(
    etcd: EtcdCluster, tmp_path: Path
) -> None:
    out = tmp_path / "audit.json"
    rc = bench_chain.main(["--quick", "--audit-cost", f"--etcd-servers={','.join(etcd.endpoints)}",
                           f"--out={out}"])  # fmt: skip
    assert rc == 0
    results = json.loads(out.read_text())
    for by_mode in results.values():
        assert set(by_mode) == {bench_chain.NO_AUDIT, bench_chain.CHAIN}
        assert all(m["client_median_ms"] > 0 for m in by_mode.values())
