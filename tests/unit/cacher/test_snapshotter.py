"""Snapshots by resourceVersion: lookup, retention from when a state stopped being
current, the count bound, etcd compaction and re-lists (``cacher.snapshotter``)."""

from __future__ import annotations

from cacher.snapshotter import Snapshotter


def test_the_state_at_a_revision_is_the_newest_snapshot_not_after_it() -> None:
    s: Snapshotter[str] = Snapshotter()
    s.add(10, "s10", now=0.0)
    s.add(13, "s13", now=1.0)
    s.add(13, "s13b", now=1.0)  # two changes in one etcd revision: the last wins
    assert s.get_less_or_equal(9) is None
    assert [s.get_less_or_equal(rv) for rv in (10, 12, 13, 99)] == ["s10", "s10", "s13b", "s13b"]
    assert len(s) == 2 and s.oldest == 10


def test_retention_counts_from_when_a_state_was_superseded() -> None:
    s: Snapshotter[str] = Snapshotter(retention=75.0)
    s.add(10, "s10", now=0.0)
    s.expire(now=1000.0)  # still the current state, however old
    assert s.get_less_or_equal(10) == "s10"
    s.add(11, "s11", now=1000.0)  # s10 superseded at 1000
    s.expire(now=1074.0)
    assert s.get_less_or_equal(10) == "s10"
    s.expire(now=1076.0)
    assert s.get_less_or_equal(10) is None and s.get_less_or_equal(11) == "s11"


def test_the_count_bound_drops_the_oldest() -> None:
    s: Snapshotter[int] = Snapshotter(max_count=3)
    for rv in range(1, 3000):
        s.add(rv, rv, now=float(rv) / 1000)
    assert len(s) == 3 and s.oldest == 2997 and s.get_less_or_equal(2996) is None


def test_compaction_keeps_the_state_at_the_compacted_revision() -> None:
    s: Snapshotter[str] = Snapshotter()
    for rv in (10, 20, 30):
        s.add(rv, f"s{rv}", now=0.0)
    s.compact(25)
    assert s.get_less_or_equal(24) is None  # compacted in etcd: not served either
    assert s.get_less_or_equal(25) == "s20" and s.get_less_or_equal(30) == "s30"
    s.compact(5)  # older than everything held: nothing changes
    assert s.oldest == 25
    s.reset()
    assert len(s) == 0 and s.get_less_or_equal(30) is None
