"""``watchcache bench-decode`` times what it says: each value decodes, from protobuf as
the server stores it and from JSON, to the same object (the tool refuses otherwise),
and the table names both sides. No timing is asserted."""

from __future__ import annotations

from lab import bench_decode


def test_each_value_is_measured_both_ways_on_the_same_object() -> None:
    results = bench_decode.measure(repeat=1, rounds=1)
    assert set(results) == {"pod", "lease"}
    for r in results.values():
        # protobuf is the smaller encoding of the same object
        assert 0 < r["protobuf_bytes"] < r["json_bytes"]
        assert r["json_best_us"] > 0 and r["protobuf_best_us"] > 0
    assert "| pod |" in bench_decode.table(results)
