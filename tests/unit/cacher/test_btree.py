"""The persistent B-tree against a plain dict: random sets and removes, every old
version unchanged, ranges, ranks and invariants (``cacher.btree``)."""

from __future__ import annotations

import random

import pytest

from cacher.btree import MAX_NODE, BTreeMap, check_invariants, extra_bytes


def _key(i: int) -> str:
    return f"/registry/pods/ns{i % 7}/p{i:06d}"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_operations_match_a_dict_and_old_versions_never_change(seed: int) -> None:
    rnd = random.Random(seed)
    tree: BTreeMap[int] = BTreeMap()
    model: dict[str, int] = {}
    versions: list[tuple[BTreeMap[int], dict[str, int]]] = []
    for step in range(6000):
        k = _key(rnd.randrange(3000))
        if rnd.random() < 0.35:
            tree = tree.remove(k)
            model.pop(k, None)
        else:
            tree = tree.set(k, step)
            model[k] = step
        if step % 500 == 0:
            versions.append((tree, dict(model)))
    check_invariants(tree)
    assert len(tree) == len(model)
    assert list(tree.items()) == sorted(model.items())
    for old, snapshot in versions:  # copy-on-write: every earlier map is as it was
        check_invariants(old)
        assert list(old.items()) == sorted(snapshot.items())


def test_ranges_ranks_and_counts() -> None:
    keys = sorted(_key(i) for i in range(1000))
    tree = BTreeMap.from_sorted((k, n) for n, k in enumerate(keys))
    check_invariants(tree)
    assert tree.depth() > 1
    prefix = "/registry/pods/ns3/"
    end = "/registry/pods/ns30"  # the prefix's end: "/" + 1
    inside = [k for k in keys if k.startswith(prefix)]
    assert [keys[v] for v in tree.values(prefix, end)] == inside
    start = inside[10] + "\x00"  # a continue key: after the 11th
    assert [keys[v] for v in tree.values(start, end)] == inside[11:]
    assert tree.count(start, end) == len(inside) - 11
    assert tree.rank(keys[500]) == 500 and tree.rank("") == 0 and tree.rank("~") == 1000
    assert tree.get(keys[3]) == 3 and tree.get("/nope") is None and keys[3] in tree


def test_removing_everything_shrinks_the_tree() -> None:
    keys = [_key(i) for i in range(5 * MAX_NODE * MAX_NODE // 4)]
    tree = BTreeMap.from_sorted((k, 0) for k in sorted(keys))
    deep = tree.depth()
    for k in keys[: len(keys) - 3]:
        tree = tree.remove(k)
    check_invariants(tree)
    assert len(tree) == 3 and tree.depth() < deep
    assert tree.remove("/absent") is tree
    for k in keys[-3:]:
        tree = tree.remove(k)
    assert len(tree) == 0 and list(tree.values()) == []


def test_extra_bytes_counts_only_what_snapshots_add() -> None:
    keys = sorted(_key(i) for i in range(2000))
    live = BTreeMap.from_sorted((k, 0) for k in keys)
    snapshots = []
    for n in range(10):
        snapshots.append(live)
        live = live.set(keys[n * 150], n + 1)
    nodes, size = extra_bytes(snapshots, live)
    assert nodes == 10 * live.depth()  # one path per change, nothing shared counted
    assert 0 < size < 10 * live.depth() * 2000
    assert extra_bytes([live], live) == (0, 0)
