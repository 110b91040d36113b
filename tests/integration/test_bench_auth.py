"""``watchcache bench-auth --quick`` runs end to end on a real etcd: two HTTPS servers
(AlwaysAllow, RBAC), a token user, both scenarios, a table and the JSON results."""

from __future__ import annotations

import json
from pathlib import Path

from lab import bench_auth
from lab.etcd import EtcdCluster


def test_bench_auth_quick(etcd: EtcdCluster, tmp_path: Path) -> None:
    out = tmp_path / "auth.json"
    rc = bench_auth.main(["--quick", f"--etcd-servers={','.join(etcd.endpoints)}",
                          f"--out={out}"])  # fmt: skip
    assert rc == 0
    results = json.loads(out.read_text())
    assert set(results) == set(bench_auth.SCENARIOS)
    for by_mode in results.values():
        assert set(by_mode) == {"AlwaysAllow", "RBAC"}
        assert all(m["client_median_ms"] > 0 for m in by_mode.values())
