"""The indexer: keys, index functions kept current across add, update, delete, replace."""

from __future__ import annotations

from proxy.informer import NAMESPACE_INDEX, Indexer, deletion_handling_key, namespace_index
from proxy.informer.indexer import DeletedFinalStateUnknown
from tests.unit.proxy.informer.fakes import obj


def _by_color(o: dict[str, object]) -> list[str]:
    spec = o.get("spec")
    return [str(spec.get("color"))] if isinstance(spec, dict) else []


def test_keys_are_namespace_slash_name_or_name() -> None:
    indexer = Indexer()
    indexer.add(obj("p", 1, "ns"))
    indexer.add(obj("node", 1))
    assert sorted(indexer.list_keys()) == ["node", "ns/p"]
    assert deletion_handling_key(DeletedFinalStateUnknown("ns/q", obj("q", 1, "ns"))) == "ns/q"


def test_indexes_follow_updates_deletes_and_replace() -> None:
    indexer = Indexer(indexers={NAMESPACE_INDEX: namespace_index, "color": _by_color})
    indexer.add(obj("a", 1, "x", spec={"color": "red"}))
    indexer.add(obj("b", 1, "x", spec={"color": "red"}))
    indexer.add(obj("c", 1, "y", spec={"color": "blue"}))
    assert indexer.index_keys("color", "red") == ["x/a", "x/b"]
    indexer.update(obj("a", 2, "x", spec={"color": "blue"}))
    assert indexer.index_keys("color", "red") == ["x/b"]
    assert indexer.index_keys("color", "blue") == ["x/a", "y/c"]
    indexer.delete(obj("b", 3, "x"))
    assert indexer.list_index_values("color") == ["blue"]
    assert [o["metadata"]["name"] for o in indexer.by_index(NAMESPACE_INDEX, "x")] == ["a"]
    indexer.replace([obj("d", 4, "z", spec={"color": "green"})])
    assert indexer.list_index_values("color") == ["green"]
    assert indexer.index_keys(NAMESPACE_INDEX, "x") == []


def test_an_index_added_later_covers_the_objects_held() -> None:
    indexer = Indexer()
    indexer.add(obj("a", 1, "x", spec={"color": "red"}))
    indexer.add_indexers({"color": _by_color})
    assert indexer.index_keys("color", "red") == ["x/a"]
