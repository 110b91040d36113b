"""lab.memory_slope against a real etcd and real servers: pods written straight into
etcd are the ones the primed server's cache counts, and the figures come out."""

from __future__ import annotations

from pathlib import Path

from lab import memory_slope
from lab.apiserver import REPO


def test_a_slope_from_an_empty_server_to_a_primed_one(tmp_path: Path) -> None:
    result = memory_slope.run([0, 40, 80], [REPO], 1, tmp_path)[str(REPO)]
    assert set(result["rss"]) == {0, 40, 80} and min(result["rss"].values()) > 0
    assert set(result["growth_per_pod"]) == {40, 80}
    # the 40 pods written between the counts are the JSON the slope is divided by
    assert 1_000 < result["json_per_pod"] < 4_000
    assert result["held_ratio"] > 1  # the cache holds more than the JSON (protobuf too)
