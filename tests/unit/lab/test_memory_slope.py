"""The memory slope's arithmetic: least RSS per count, growth from the empty count,
slope between the first and last counts, all against the pods' JSON bytes."""

from __future__ import annotations

from lab.memory_slope import summary


def _row(rss: int, json_bytes: int, held: int) -> dict[str, int]:
    return {"rss": rss, "json_bytes": json_bytes, "held_bytes": held, "objects": 0}


def test_the_slope_is_between_the_first_and_last_counts_at_their_least_rss() -> None:
    rows = {
        0: [_row(100_000, 0, 0), _row(90_000, 0, 0)],
        10: [_row(150_000, 10_000, 20_000)],
        30: [_row(260_000, 30_000, 60_000), _row(250_000, 30_000, 60_000)],
    }
    out = summary([0, 10, 30], rows)
    assert out["rss"] == {0: 90_000, 10: 150_000, 30: 250_000}
    assert out["growth_per_pod"] == {10: 6_000, 30: 160_000 / 30}
    assert out["growth_ratio"][10] == 6.0
    assert out["slope_per_pod"] == 5_000 and out["json_per_pod"] == 1_000
    assert out["slope_ratio"] == 5.0 and out["held_ratio"] == 2.0


def test_without_an_empty_count_there_is_no_growth() -> None:
    out = summary([10, 30], {10: [_row(150, 10, 20)], 30: [_row(250, 30, 60)]})
    assert "growth_per_pod" not in out and out["slope_per_pod"] == 5.0
