"""``?dryRun=All``: writes that are fully processed (decoding, validation, defaulting,
preconditions, conflicts) but not persisted, as kube-apiserver's dry-run.

``DryRunStore`` wraps a storage: reads pass through; ``create``, ``guaranteed_update``
and ``delete`` compute their result from a quorum read and write nothing. The returned
object of a dry-run create has no resourceVersion; an update or delete carries the
current one.
"""

from __future__ import annotations

import orjson

from storage import errors as serr
from storage.interfaces import (
    GetOptions,
    Interface,
    JSONObject,
    Preconditions,
    StoredObject,
    UpdateFunc,
    ValidateDeletion,
)

__all__ = ["DryRunStore"]


class DryRunStore:
    """The write half of ``storage.interfaces.Interface`` without writing."""

    def __init__(self, store: Interface) -> None:
        self._store = store

    async def create(self, key: str, obj: JSONObject) -> StoredObject:
        try:
            await self._store.get(key, GetOptions())
        except serr.NotFound:
            return StoredObject(key, orjson.dumps(obj), 0)
        raise serr.AlreadyExists(key)

    async def guaranteed_update(
        self,
        key: str,
        preconditions: Preconditions | None,
        try_update: UpdateFunc,
        *,
        ignore_not_found: bool = False,
        cached_existing_object: StoredObject | None = None,
    ) -> StoredObject:
        """What the update would store, from etcd's current object (a dry run writes
        nothing that would catch a stale copy: ``cached_existing_object`` is unused)."""
        try:
            current = await self._store.get(key, GetOptions())
        except serr.NotFound:
            if not ignore_not_found:
                raise
            return StoredObject(key, orjson.dumps(await try_update({})), 0)
        if preconditions is not None:
            preconditions.check(key, current.obj)
        updated = await try_update(current.copy())
        meta = updated.setdefault("metadata", {})
        meta["resourceVersion"] = str(current.resource_version)
        return StoredObject(key, orjson.dumps(updated), current.resource_version)

    async def delete(
        self,
        key: str,
        preconditions: Preconditions | None = None,
        validate_deletion: ValidateDeletion | None = None,
        *,
        ignore_store_read_error: bool = False,
        cached_existing_object: StoredObject | None = None,
    ) -> StoredObject:
        """What the delete would return, from etcd's current object
        (``cached_existing_object`` unused, as in guaranteed_update)."""
        if ignore_store_read_error:  # would the unsafe delete go through? (nothing written)
            try:
                await self._store.get(key, GetOptions())
            except serr.CorruptObject:
                return StoredObject(key, b"{}", 0, {})
            raise serr.InvalidObject(key, serr.UNSAFE_DELETE_OF_DECODABLE)
        current = await self._store.get(key, GetOptions())
        if preconditions is not None:
            preconditions.check(key, current.obj)
        if validate_deletion is not None:
            await validate_deletion(current.copy())
        return current
