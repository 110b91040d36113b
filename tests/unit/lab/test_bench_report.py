"""The benchmark report says what it measured: a version outside git, and no CPU number
where the runs used too few 10 ms ticks to measure one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lab.bench import package_version, source_revision
from lab.bench_report import _cpu_ms, cpu_measurable


def test_outside_git_the_report_names_a_version(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WATCHCACHE_VERSION", raising=False)
    monkeypatch.setenv("WATCHCACHE_COMMIT", "unknown")  # the image's default build arg
    assert source_revision(tmp_path) == f"version {package_version()}"
    assert package_version() != "unknown"
    monkeypatch.setenv("WATCHCACHE_VERSION", "v0.1.0-12-gabc1234")
    monkeypatch.setenv("WATCHCACHE_COMMIT", "abc1234")
    assert source_revision(tmp_path) == "version v0.1.0-12-gabc1234, commit abc1234"


def test_in_git_the_report_names_the_commit() -> None:
    assert source_revision().startswith("commit ")


def _stats(server_cpu: float, etcd_cpu: float, runs: int) -> dict[str, Any]:
    return {"server_cpu": server_cpu, "etcd_cpu": etcd_cpu, "runs": runs}


def test_cpu_below_the_tick_resolution_is_not_reported_as_a_number() -> None:
    quick = _stats(0.01, 0.0, 3)  # one 10 ms tick seen in one of 3 runs: noise
    assert not cpu_measurable(quick) and _cpu_ms(quick, "server_cpu") == "< tick"
    full = _stats(0.012, 0.004, 20)  # 32 ticks over 20 runs
    assert cpu_measurable(full) and _cpu_ms(full, "server_cpu") == "12.0"
