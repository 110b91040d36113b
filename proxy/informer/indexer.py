"""The informer's local store: objects by key plus secondary indexes (client-go's
``cache.Indexer`` over a ``threadSafeMap``).

"Thread-safe" here means event-loop-atomic: every method is synchronous, so a reader on
the event loop never sees a half-applied change. Objects are shared, never copied:
callers must not mutate what they get (copy first), as with client-go's listers.

Keys are ``namespace/name``, or ``name`` for a cluster-scoped object
(``meta_namespace_key``). An index function maps an object to the index values it is
filed under (``namespace_index`` files it under its namespace).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from storage.interfaces import JSONObject

__all__ = [
    "NAMESPACE_INDEX",
    "DeletedFinalStateUnknown",
    "IndexFunc",
    "Indexer",
    "KeyFunc",
    "deletion_handling_key",
    "meta_namespace_key",
    "namespace_index",
]

KeyFunc = Callable[[JSONObject], str]
IndexFunc = Callable[[JSONObject], Iterable[str]]
NAMESPACE_INDEX = "namespace"


def meta_namespace_key(obj: JSONObject) -> str:
    """``namespace/name``, or ``name`` when the object has no namespace."""
    meta = obj.get("metadata") or {}
    namespace, name = meta.get("namespace"), str(meta.get("name") or "")
    return f"{namespace}/{name}" if namespace else name


def namespace_index(obj: JSONObject) -> list[str]:
    return [str((obj.get("metadata") or {}).get("namespace") or "")]


@dataclass(frozen=True, slots=True)
class DeletedFinalStateUnknown:
    """What ``on_delete`` gets for an object found gone at a relist: its deletion was
    missed, so ``obj`` is the last state this store had, not its final state."""

    key: str
    obj: JSONObject


def deletion_handling_key(obj: JSONObject | DeletedFinalStateUnknown) -> str:
    """The key of a deleted object or of a tombstone (``DeletionHandlingMetaNamespaceKeyFunc``)."""
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    return meta_namespace_key(obj)


class Indexer:
    """Objects by key, with the indexes of ``indexers`` (name -> index function)."""

    def __init__(
        self,
        key_func: KeyFunc = meta_namespace_key,
        indexers: dict[str, IndexFunc] | None = None,
    ) -> None:
        self.key_func = key_func
        self._items: dict[str, JSONObject] = {}
        self._indexers: dict[str, IndexFunc] = dict(indexers or {})
        # index name -> index value -> keys
        self._indices: dict[str, dict[str, set[str]]] = {n: {} for n in self._indexers}

    # -- reads
    def get_by_key(self, key: str) -> JSONObject | None:
        return self._items.get(key)

    def get(self, obj: JSONObject) -> JSONObject | None:
        return self._items.get(self.key_func(obj))

    def list(self) -> builtins.list[JSONObject]:
        return list(self._items.values())

    def list_keys(self) -> builtins.list[str]:
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]:
        """Keys filed under ``value`` of the index (KeyError for an unknown index)."""
        return sorted(self._indices[index_name].get(value, ()))

    def by_index(self, index_name: str, value: str) -> builtins.list[JSONObject]:
        return [self._items[k] for k in self.index_keys(index_name, value)]

    def list_index_values(self, index_name: str) -> builtins.list[str]:
        return sorted(self._indices[index_name])

    # -- writes
    def index_names(self) -> builtins.list[str]:
        return list(self._indexers)

    def add_indexers(self, indexers: dict[str, IndexFunc]) -> None:
        """More indexes, filled from the objects already held."""
        for name, func in indexers.items():
            if name in self._indexers:
                raise ValueError(f"indexer conflict: {name}")
            self._indexers[name] = func
            self._indices[name] = {}
            for key, obj in self._items.items():
                self._file(name, func, key, obj)

    def add(self, obj: JSONObject) -> JSONObject | None:
        """Store ``obj`` (add or update); the object it replaced, if any."""
        key = self.key_func(obj)
        old = self._items.get(key)
        if old is not None:
            self._unindex(key, old)
        self._items[key] = obj
        for name, func in self._indexers.items():
            self._file(name, func, key, obj)
        return old

    update = add

    def delete_key(self, key: str) -> JSONObject | None:
        """Remove ``key``; the object it held, if any."""
        old = self._items.pop(key, None)
        if old is not None:
            self._unindex(key, old)
        return old

    def delete(self, obj: JSONObject) -> JSONObject | None:
        return self.delete_key(self.key_func(obj))

    def replace(self, items: Iterable[JSONObject]) -> None:
        """Hold exactly ``items`` (indexes rebuilt)."""
        self._items = {self.key_func(o): o for o in items}
        self._indices = {n: {} for n in self._indexers}
        for key, obj in self._items.items():
            for name, func in self._indexers.items():
                self._file(name, func, key, obj)

    # -- index maintenance
    def _file(self, name: str, func: IndexFunc, key: str, obj: JSONObject) -> None:
        index = self._indices[name]
        for value in func(obj):
            index.setdefault(value, set()).add(key)

    def _unindex(self, key: str, obj: JSONObject) -> None:
        for name, func in self._indexers.items():
            index = self._indices[name]
            for value in func(obj):
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]
