"""A persistent (copy-on-write) ordered map: the watch cache's store, after
kube-apiserver's ``store_btree.go``, whose B-tree ``Clone()`` makes the snapshots that
serve paginated and exact LISTs (``ListFromCacheSnapshot``).

A ``BTreeMap`` is an immutable value: ``set`` and ``remove`` return a new map that
shares every node but the ones on the changed key's path (one leaf and one node per
level: about 1.5 KB at 10,000 keys), so keeping the map of an instant is keeping a
reference (O(1)), and the previous map stays valid and unchanged for whoever holds it.
No snapshot copies the store.

It is a B+tree: leaves hold up to ``MAX_NODE`` sorted keys and their values; a branch
holds, per child, its smallest key and its number of keys, so ``rank`` (keys before a
key: a paged list's ``remainingItemCount``) is O(log n). Nodes are tuples (cheap to
slice, and a tuple of strings or ints leaves the cyclic collector's lists). A node that
falls under ``MAX_NODE // 4`` entries is merged with a neighbour (split again if that
is too big), so the tree stays ~log(n) deep whatever the deletes.

Complexities (n keys, B = MAX_NODE): get O(log n); set/remove O(B log n) copied
references; iterating k values from a key O(log n + k); rank O(B log n).
"""

from __future__ import annotations

import sys
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from typing import Generic, TypeVar

V = TypeVar("V")

MAX_NODE = 64
MIN_NODE = MAX_NODE // 4


class _Leaf:
    __slots__ = ("keys", "vals")

    def __init__(self, keys: tuple[str, ...], vals: tuple[object, ...]) -> None:
        self.keys = keys
        self.vals = vals


class _Branch:
    """``keys[i]`` is the smallest key under ``children[i]``, ``counts[i]`` its size."""

    __slots__ = ("children", "counts", "keys", "size")

    def __init__(
        self, keys: tuple[str, ...], children: tuple[_Node, ...], counts: tuple[int, ...]
    ) -> None:
        self.keys = keys
        self.children = children
        self.counts = counts
        self.size = sum(counts)


_Node = _Leaf | _Branch


def _size(node: _Node) -> int:
    return len(node.keys) if isinstance(node, _Leaf) else node.size


class BTreeMap(Generic[V]):
    """An immutable map from ``str`` keys to values, ordered by key."""

    __slots__ = ("_root",)

    def __init__(self, root: _Node | None = None) -> None:
        self._root = root

    @classmethod
    def from_sorted(cls, items: Iterable[tuple[str, V]]) -> BTreeMap[V]:
        """A map of ``items``, whose keys are strictly increasing (not checked)."""
        keys: list[str] = []
        vals: list[V] = []
        for k, v in items:
            keys.append(k)
            vals.append(v)
        return cls.from_sorted_lists(keys, vals)

    @classmethod
    def from_sorted_lists(cls, keys: list[str], vals: list[V]) -> BTreeMap[V]:
        """A map of ``keys[i] -> vals[i]`` (keys strictly increasing, not checked), built
        bottom-up with nodes 3/4 full by slicing: O(n) at C speed (100,000 keys in a few
        ms, so a re-list's swap stays short)."""
        fill = MAX_NODE * 3 // 4
        level: list[_Node] = [
            _Leaf(tuple(keys[i : i + fill]), tuple(vals[i : i + fill]))
            for i in range(0, len(keys), fill)
        ]
        while len(level) > 1:
            level = [_branch(tuple(level[i : i + fill])) for i in range(0, len(level), fill)]
        return cls(level[0] if level else None)

    def __len__(self) -> int:
        return 0 if self._root is None else _size(self._root)

    def get(self, key: str) -> V | None:
        node = self._root
        if node is None:
            return None
        while isinstance(node, _Branch):
            i = bisect_right(node.keys, key) - 1
            if i < 0:
                return None
            node = node.children[i]
        i = bisect_left(node.keys, key)
        if i < len(node.keys) and node.keys[i] == key:
            found: V = node.vals[i]  # type: ignore[assignment]
            return found
        return None

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def set(self, key: str, value: V) -> BTreeMap[V]:
        """This map with ``key`` set to ``value`` (added or replaced)."""
        if self._root is None:
            return BTreeMap(_Leaf((key,), (value,)))
        parts = _insert(self._root, key, value)
        return BTreeMap(parts[0] if len(parts) == 1 else _branch(parts))

    def remove(self, key: str) -> BTreeMap[V]:
        """This map without ``key`` (itself when ``key`` is absent)."""
        if self._root is None:
            return self
        root = _remove(self._root, key)
        if root is self._root:
            return self
        while isinstance(root, _Branch) and len(root.children) == 1:
            root = root.children[0]
        return BTreeMap(root)

    def values(self, start: str = "", end: str | None = None) -> Iterator[V]:
        """Values of the keys in [``start``, ``end``) (``end`` None: to the last), in key
        order. The map is immutable: the iteration sees this map whatever happens to
        the store meanwhile."""
        for _, vals in self._slices(start, end):
            yield from vals  # type: ignore[misc]

    def value_list(self, start: str = "", end: str | None = None) -> list[V]:
        """``list(values(start, end))``, made leaf slice by leaf slice (10x faster)."""
        out: list[V] = []
        for _, vals in self._slices(start, end):
            out.extend(vals)  # type: ignore[arg-type]
        return out

    def items(self, start: str = "", end: str | None = None) -> Iterator[tuple[str, V]]:
        for keys, vals in self._slices(start, end):
            yield from zip(keys, vals, strict=True)

    def _slices(
        self, start: str, end: str | None
    ) -> Iterator[tuple[tuple[str, ...], tuple[object, ...]]]:
        if self._root is not None:
            yield from _slices(self._root, start, end)

    def rank(self, key: str) -> int:
        """How many keys are smaller than ``key``."""
        node, before = self._root, 0
        if node is None:
            return 0
        while isinstance(node, _Branch):
            i = bisect_left(node.keys, key) - 1  # the child that may hold smaller keys
            if i < 0:
                return before
            before += sum(node.counts[:i])
            node = node.children[i]
        return before + bisect_left(node.keys, key)

    def count(self, start: str = "", end: str | None = None) -> int:
        """How many keys are in [``start``, ``end``)."""
        stop = len(self) if end is None else self.rank(end)
        return max(0, stop - self.rank(start))

    def depth(self) -> int:
        node, depth = self._root, 0
        while node is not None:
            depth += 1
            node = node.children[0] if isinstance(node, _Branch) else None
        return depth


# -- building blocks (pure functions on nodes) -------------------------------------------


def _branch(children: tuple[_Node, ...]) -> _Branch:
    return _Branch(tuple(c.keys[0] for c in children), children, tuple(_size(c) for c in children))


def _split_leaf(keys: tuple[str, ...], vals: tuple[object, ...]) -> tuple[_Node, ...]:
    if len(keys) <= MAX_NODE:
        return (_Leaf(keys, vals),)
    half = len(keys) // 2
    return (_Leaf(keys[:half], vals[:half]), _Leaf(keys[half:], vals[half:]))


def _split_branch(children: tuple[_Node, ...]) -> tuple[_Node, ...]:
    if len(children) <= MAX_NODE:
        return (_branch(children),)
    half = len(children) // 2
    return (_branch(children[:half]), _branch(children[half:]))


def _insert(node: _Node, key: str, value: object) -> tuple[_Node, ...]:
    """The node(s) replacing ``node`` once ``key`` is set: one, or two after a split."""
    if isinstance(node, _Leaf):
        keys, vals = node.keys, node.vals
        i = bisect_left(keys, key)
        if i < len(keys) and keys[i] == key:
            return (_Leaf(keys, (*vals[:i], value, *vals[i + 1 :])),)
        return _split_leaf((*keys[:i], key, *keys[i:]), (*vals[:i], value, *vals[i:]))
    i = max(bisect_right(node.keys, key) - 1, 0)
    parts = _insert(node.children[i], key, value)
    children = node.children[:i] + parts + node.children[i + 1 :]
    if len(parts) == 1:  # the common case: one child changed, no split
        child = parts[0]
        keys = node.keys if i else (child.keys[0], *node.keys[1:])
        counts = (*node.counts[:i], _size(child), *node.counts[i + 1 :])
        return (_Branch(keys, children, counts),)
    return _split_branch(children)


def _remove(node: _Node, key: str) -> _Node | None:
    """``node`` without ``key``: the same node if absent, None if now empty."""
    if isinstance(node, _Leaf):
        i = bisect_left(node.keys, key)
        if i == len(node.keys) or node.keys[i] != key:
            return node
        if len(node.keys) == 1:
            return None
        return _Leaf(node.keys[:i] + node.keys[i + 1 :], node.vals[:i] + node.vals[i + 1 :])
    i = bisect_right(node.keys, key) - 1
    if i < 0:
        return node
    old = node.children[i]
    child = _remove(old, key)
    if child is old:
        return node
    kids = node.children
    if child is None:
        rest = kids[:i] + kids[i + 1 :]
        return _branch(rest) if rest else None
    if _entries(child) >= MIN_NODE or len(kids) == 1:
        return _branch((*kids[:i], child, *kids[i + 1 :]))
    # Too small: merge with a neighbour (and split again if the pair is too big).
    j = i - 1 if i > 0 else i + 1
    lo, hi = (kids[j], child) if j < i else (child, kids[j])
    merged = _merge(lo, hi)
    first = min(i, j)
    return _branch(kids[:first] + merged + kids[first + 2 :])


def _entries(node: _Node) -> int:
    return len(node.keys)


def _merge(lo: _Node, hi: _Node) -> tuple[_Node, ...]:
    """Two neighbours (``lo``'s keys all smaller) as one node, or two even halves."""
    if isinstance(lo, _Leaf) and isinstance(hi, _Leaf):
        return _split_leaf(lo.keys + hi.keys, lo.vals + hi.vals)
    assert isinstance(lo, _Branch) and isinstance(hi, _Branch)
    return _split_branch(lo.children + hi.children)


def _slices(
    node: _Node, start: str, end: str | None
) -> Iterator[tuple[tuple[str, ...], tuple[object, ...]]]:
    """(keys, values) of each leaf's part in [``start``, ``end``), in key order."""
    j = len(node.keys) if end is None else bisect_left(node.keys, end)
    if isinstance(node, _Leaf):
        i = bisect_left(node.keys, start) if start else 0
        yield node.keys[i:j], node.vals[i:j]
        return
    i = max(bisect_right(node.keys, start) - 1, 0) if start else 0
    for child in node.children[i:j]:
        yield from _slices(child, start, end)


def extra_bytes(trees: Iterable[BTreeMap[V]], live: BTreeMap[V]) -> tuple[int, int]:
    """What ``trees`` (snapshots) hold beyond ``live``: (nodes, bytes of those nodes and
    their tuples). Values are not counted (old versions are the history's too). A walk
    stops at a node already seen, so its cost is the number of nodes counted."""
    seen: set[int] = set()
    _walk(live._root, seen, None)
    sizes = [0, 0]
    for tree in trees:
        _walk(tree._root, seen, sizes)
    return sizes[0], sizes[1]


def _walk(node: _Node | None, seen: set[int], sizes: list[int] | None) -> None:
    if node is None or id(node) in seen:
        return
    seen.add(id(node))
    if sizes is not None:
        sizes[0] += 1
        parts = (node.keys, node.vals) if isinstance(node, _Leaf) else (
            node.keys, node.children, node.counts)  # fmt: skip
        sizes[1] += sys.getsizeof(node) + sum(sys.getsizeof(p) for p in parts)
    if isinstance(node, _Branch):
        for child in node.children:
            _walk(child, seen, sizes)


def check_invariants(tree: BTreeMap[V]) -> None:
    """For tests: keys sorted, separators and counts right, leaves at one depth."""
    root = tree._root
    if root is None:
        return
    depths: set[int] = set()

    def walk(node: _Node, depth: int) -> tuple[str, str, int]:
        assert node.keys, "no empty node"
        assert len(node.keys) <= MAX_NODE
        if isinstance(node, _Leaf):
            assert list(node.keys) == sorted(set(node.keys))
            depths.add(depth)
            return node.keys[0], node.keys[-1], len(node.keys)
        last = ""
        for k, c, n in zip(node.keys, node.children, node.counts, strict=True):
            lo, hi, size = walk(c, depth + 1)
            assert lo == k and size == n and lo > last
            last = hi
        return node.keys[0], last, node.size

    walk(root, 0)
    assert len(depths) == 1, f"leaves at depths {depths}"
