"""Etcd3Store: kube-apiserver's etcd3 storage (``storage/etcd3/store.go``) over our
etcd client — the uncached path.

Writes are guarded transactions on ``mod_revision`` (create: absent; update and delete:
unchanged since read), retried on races. Reads are quorum reads. Values are the
canonical JSON of ``storage.codec``; objects come back as ``StoredObject`` with
``metadata.resourceVersion`` = the key's mod_revision.

Every etcd call is bounded by ``request_timeout`` and its errors are translated in
``storage.etcd3.translate``; nothing but ``storage.errors`` escapes (plus whatever the
caller's own ``try_update`` / ``validate_deletion`` raise).

Values that cannot be decoded (kube-apiserver 1.37, ``store.go`` and
``corrupt_obj_deleter.go``, with ``AllowUnsafeMalformedObjectDeletion``, beta and on by
default since 1.37): GET raises ``CorruptObject``; a LIST collects up to 100 of them
and raises ``StoreReadError``; ``delete(..., ignore_store_read_error=True)`` deletes a
corrupt value without reading it (and refuses a value that decodes: ``InvalidObject``).
With the gate off, GET and LIST fail on the first one with ``InternalStorageError``.
The store is also the watch cache's lister-watcher (``storage.etcd3.lister_watcher``).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncGenerator, Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

from etcdclient import EtcdClient
from etcdclient.types import KeyValue, TxnResult
from storage import codec, media_types, metrics
from storage.codec import JSON_CODEC, Codec
from storage.errors import (
    UNSAFE_DELETE_OF_DECODABLE,
    AlreadyExists,
    CorruptObject,
    InternalStorageError,
    InvalidObject,
    NotFound,
    TooLargeResourceVersion,
)
from storage.etcd3 import feature, lister_watcher
from storage.etcd3.lease_manager import LeaseManager
from storage.etcd3.lister import PAGE_SIZE, list_objects
from storage.etcd3.translate import call
from storage.etcd3.watcher import Etcd3Watcher
from storage.interfaces import (
    GetOptions,
    JSONObject,
    ListOptions,
    ListPage,
    ListResult,
    Preconditions,
    StoredObject,
    UpdateFunc,
    ValidateDeletion,
    Watcher,
)
from storage.resource_version import parse_resource_version

P = ParamSpec("P")
T = TypeVar("T")


def _labelled(
    method: Callable[Concatenate[Etcd3Store, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[Etcd3Store, P], Coroutine[Any, Any, T]]:
    """Attribute the method's etcd calls (and the watcher task it may start) to the
    store's group/resource in etcd_request_duration_seconds."""

    @functools.wraps(method)
    async def wrapper(self: Etcd3Store, /, *args: P.args, **kwargs: P.kwargs) -> T:
        with metrics.object_type(self._group, self._resource):
            return await method(self, *args, **kwargs)

    return wrapper


class Etcd3Store:
    """storage.interfaces.Interface over etcd. Keys are full etcd keys."""

    def __init__(
        self,
        client: EtcdClient,
        *,
        request_timeout: float = 10.0,
        list_page_size: int = PAGE_SIZE,
        group: str = "",
        resource: str = "",
        allow_unsafe_malformed_object_deletion: bool = True,
        codec: Codec = JSON_CODEC,
        ttl_seconds: int = 0,
    ) -> None:
        """``list_page_size``: keys per etcd Range when a list without a limit is read
        page by page at one revision (see ``storage.etcd3.lister``). ``group`` and
        ``resource`` label this store's etcd calls in etcd_request_duration_seconds
        (unlabelled stores record nothing), as kube-apiserver has one store per resource.
        ``allow_unsafe_malformed_object_deletion``: the feature gate of that name.
        ``codec``: what writes encode to (reads decode whatever they find).
        ``ttl_seconds`` > 0: every write puts the value under an etcd lease that ends
        that long after it (the events REST storage's TTLFunc, ``--event-ttl``)."""
        self._codec = codec
        self._ttl = ttl_seconds
        self._leases = LeaseManager(client) if ttl_seconds > 0 else None
        self._unsafe_delete = allow_unsafe_malformed_object_deletion
        self._progress_supported: bool | None = None
        self._group = group
        self._resource = resource
        self._client = client
        self._timeout = request_timeout
        self._page_size = list_page_size
        # Watchers still open; stopped by close(). Changed by watch() and the watchers.
        self._watchers: set[Etcd3Watcher] = set()

    @property
    def client(self) -> EtcdClient:
        return self._client

    @property
    def request_timeout(self) -> float:
        return self._timeout

    # ----------------------------------------------------------------------- reads

    @_labelled
    async def get(self, key: str, opts: GetOptions) -> StoredObject:
        """A quorum read. A resourceVersion newer than etcd's revision is
        TooLargeResourceVersion at once (etcd cannot wait for the future). With
        ``ignore_not_found`` an absent key gives an empty object with RV 0."""
        minimum = parse_resource_version(opts.resource_version)
        resp = await call(self._client.get(key.encode()), self._timeout, key, operation="get")
        if minimum > resp.revision:
            raise TooLargeResourceVersion(minimum, resp.revision)
        if resp.kv is None:
            if opts.ignore_not_found:
                return StoredObject(key, b"{}", 0, {})
            raise NotFound(key)
        return self._decode(key, resp.kv.value, resp.kv.mod_revision)

    def _decode(self, key: str, value: bytes, rev: int) -> StoredObject:
        try:
            return codec.decode(key, value, rev)
        except CorruptObject as err:
            if self._unsafe_delete:
                raise
            raise InternalStorageError(f"unable to decode object at {key}: {err.detail}") from err

    @_labelled
    async def get_list(self, key: str, opts: ListOptions) -> ListResult:
        """See ``storage.etcd3.lister.list_objects``."""
        return await list_objects(
            self._client, self._timeout, key, opts,
            page_size=self._page_size, aggregate_corrupt=self._unsafe_delete,
        )  # fmt: skip

    @_labelled
    async def count(self, key: str) -> int:
        prefix = key if key.endswith("/") else key + "/"
        resp = await call(
            self._client.list_prefix(prefix.encode(), count_only=True),
            self._timeout,
            key,
            operation="listWithCount",
        )
        return resp.count

    @_labelled
    async def current_resource_version(self) -> int:
        """etcd's current revision, from the header of a quorum read."""
        resp = await call(
            self._client.get(b"\x00"), self._timeout, operation="getCurrentResourceVersion"
        )
        return resp.revision

    def readiness_check(self) -> None:
        """Always ready: etcd's reachability is the health checks' business."""

    # ------------------------------------------------- the watch cache's lister-watcher

    async def list_pages(self, prefix: str, *, page_size: int) -> AsyncGenerator[ListPage, None]:
        """See ``storage.etcd3.lister_watcher.list_pages``."""
        pages = lister_watcher.list_pages(
            self._client, self._timeout, prefix, page_size, (self._group, self._resource)
        )
        async with contextlib.aclosing(pages):
            async for page in pages:
                yield page

    def watch_changes(self, prefix: str, start_revision: int) -> lister_watcher.ChangeStream:
        return lister_watcher.ChangeStream(self._client, prefix, start_revision)

    @_labelled
    async def supports_request_watch_progress(self) -> bool:
        if self._progress_supported is None:
            self._progress_supported = await feature.supports_request_watch_progress(
                self._client, self._timeout
            )
        return self._progress_supported

    @_labelled
    async def request_watch_progress(self, prefix: str = "") -> None:
        await call(self._client.request_progress(prefix), self._timeout,
                   operation="requestWatchProgress")  # fmt: skip

    # ----------------------------------------------------------------------- writes

    @_labelled
    async def create(self, key: str, obj: JSONObject) -> StoredObject:
        meta = obj.get("metadata")
        if isinstance(meta, dict) and meta.get("resourceVersion", "") not in ("", "0"):
            raise InternalStorageError(
                "resourceVersion should not be set on objects to be created", key
            )
        data = self._codec.encode(obj)
        lease = await self._lease(key)
        txn = await call(
            self._client.create(key.encode(), data, lease=lease),
            self._timeout,
            key,
            operation="create",
        )
        if not txn.succeeded:
            raise AlreadyExists(key)
        return codec.stored_from_encoded(key, data, txn.revision)

    async def _lease(self, key: str) -> int:
        """The lease a write of ``key`` goes under (0: none; the value lives on)."""
        if self._leases is None:
            return 0
        return await call(self._leases.get_lease(self._ttl), self._timeout, key,
                          operation="lease_grant")  # fmt: skip

    @_labelled
    async def guaranteed_update(
        self,
        key: str,
        preconditions: Preconditions | None,
        try_update: UpdateFunc,
        *,
        ignore_not_found: bool = False,
        cached_existing_object: StoredObject | None = None,
    ) -> StoredObject:
        """Read, check preconditions, ``try_update`` a private copy, write if the
        bytes changed, guarded by mod_revision; on a lost race start over from the
        value etcd returned with the failed transaction.

        ``cached_existing_object`` (upstream's cachedExistingObject: the watch cache's
        copy) stands in for the first read, saving an etcd read per update. It may be
        stale, so nothing it leads to is believed before etcd confirms it: a write from
        it loses its compare-and-swap and starts over from etcd's value; a failed
        precondition or ``try_update`` error is raised only if etcd still holds that
        version (else the loop starts over from etcd's); an update that would change
        nothing returns only once etcd's current bytes are the same."""
        if cached_existing_object is not None:
            kv: KeyValue | None = self._cached_kv(key, cached_existing_object)
            current = False
        else:
            kv, current = await self._read(key), True
        while True:
            state = self._state(key, kv, ignore_not_found)
            desired = codec.mutable_copy(state) if kv is not None else {}
            try:
                if preconditions is not None:
                    preconditions.check(key, desired)
                updated = await try_update(desired)
            except Exception as err:
                if current:
                    raise
                assert kv is not None  # a cached state is an object
                kv, current = await self._confirm(key, kv, err), True
                continue
            data = self._codec.encode(updated)
            if kv is not None and data == kv.value:
                if current:
                    return state  # nothing changed: no write, no event
                kv, current = await self._read(key), True
                if kv is not None and data == kv.value:
                    return self._state(key, kv, ignore_not_found)
                continue  # etcd's value is not the cached one: start over from it
            txn = await self._put_if_unchanged(key, data, kv)
            if txn.succeeded:
                return codec.stored_from_encoded(key, data, txn.revision)
            kv, current = txn.kv, True

    async def _put_if_unchanged(self, key: str, data: bytes, kv: KeyValue | None) -> TxnResult:
        """Write ``data`` if ``key`` is still at ``kv``'s mod_revision (absent: 0)."""
        expected = kv.mod_revision if kv is not None else 0
        lease = await self._lease(key)
        return await call(
            self._client.optimistic_put(key.encode(), data, expected, lease=lease),
            self._timeout,
            key,
            operation="update",
        )

    async def _confirm(self, key: str, cached: KeyValue, err: Exception) -> KeyValue | None:
        """``err`` arose on the watch cache's copy ``cached``: raised if etcd still holds
        that version (the copy was current), else etcd's value (None: gone) for the
        caller to start over from."""
        fresh = await self._read(key)
        if fresh is not None and fresh.mod_revision == cached.mod_revision:
            raise err
        return fresh

    def _cached_kv(self, key: str, cached: StoredObject) -> KeyValue:
        """What etcd held for the watch cache's copy, as far as the loop reads it: its
        mod_revision and bytes to compare an update with — the protobuf value the copy
        was read from, else the copy in this store's encoding (an encoding that differs
        from etcd's bytes only makes the loop ask etcd: see ``guaranteed_update``)."""
        value = cached.remembered(media_types.STORED_PROTOBUF)
        if not isinstance(value, bytes):
            value = self._codec.encode(cached.decoded())
        return KeyValue(key.encode(), value, 0, cached.resource_version, 0, 0)

    @_labelled
    async def delete(
        self,
        key: str,
        preconditions: Preconditions | None = None,
        validate_deletion: ValidateDeletion | None = None,
        *,
        ignore_store_read_error: bool = False,
        cached_existing_object: StoredObject | None = None,
    ) -> StoredObject:
        """Delete guarded by mod_revision, retried on races; returns the last state with
        the deletion revision as its resourceVersion.

        ``ignore_store_read_error`` (DeleteOptions' ignoreStoreReadErrorWithClusterBreaking
        Potential, honoured only with the feature gate): delete a value that cannot be
        decoded, skipping preconditions and validation; InvalidObject if it decodes. The
        result is then an empty object with the deletion revision.
        ``cached_existing_object``: the watch cache's copy instead of the first read, as
        in ``guaranteed_update`` (upstream's conditionalDelete): a stale copy's delete
        loses its compare-and-swap; its precondition or validation error stands only if
        etcd still holds that version."""
        if ignore_store_read_error and self._unsafe_delete:
            return await self._delete_corrupt(key)
        if cached_existing_object is not None:
            kv: KeyValue | None = self._cached_kv(key, cached_existing_object)
            current = False
        else:
            kv, current = await self._read(key), True
        while True:
            obj = codec.mutable_copy(self._state(key, kv, ignore_not_found=False))
            assert kv is not None
            try:
                if preconditions is not None:
                    preconditions.check(key, obj)
                if validate_deletion is not None:
                    await validate_deletion(obj)
            except Exception as err:
                if current:
                    raise
                kv, current = await self._confirm(key, kv, err), True
                continue
            txn = await call(
                self._client.optimistic_delete(key.encode(), kv.mod_revision),
                self._timeout,
                key,
                operation="delete",
            )
            if txn.succeeded:  # etcd's own bytes of what it deleted, when it sent them
                deleted = txn.kv if txn.kv is not None else kv
                return codec.decode(key, deleted.value, txn.revision, keep_obj=False)
            kv, current = txn.kv, True

    async def _delete_corrupt(self, key: str) -> StoredObject:
        """upstream's conditionalDelete with expectTransformOrDecodeError."""
        kv = await self._read(key)
        while True:
            if kv is None:
                raise NotFound(key)
            try:
                codec.decode(key, kv.value, kv.mod_revision, keep_obj=True)
            except CorruptObject:
                pass
            else:
                raise InvalidObject(key, UNSAFE_DELETE_OF_DECODABLE)
            txn = await call(
                self._client.optimistic_delete(key.encode(), kv.mod_revision), self._timeout, key,
                operation="delete",
            )
            if txn.succeeded:
                return StoredObject(key, b"{}", txn.revision, {})
            kv = txn.kv

    async def _read(self, key: str) -> KeyValue | None:
        resp = await call(self._client.get(key.encode()), self._timeout, key, operation="get")
        return resp.kv

    @staticmethod
    def _state(key: str, kv: KeyValue | None, ignore_not_found: bool) -> StoredObject:
        if kv is None:
            if not ignore_not_found:
                raise NotFound(key)
            return StoredObject(key, b"{}", 0, {})
        return codec.decode(key, kv.value, kv.mod_revision, keep_obj=False)

    # ----------------------------------------------------------------------- watch

    @_labelled
    async def watch(self, key: str, opts: ListOptions) -> Watcher:
        """A watch served by etcd (``--watch-cache=false``); see Etcd3Watcher."""
        start = parse_resource_version(opts.resource_version)
        if start == 0 and opts.send_initial_events is False:
            # No initial state: changes after etcd's revision at the time of this call.
            start = await self.current_resource_version()
        watcher = Etcd3Watcher(self._client, self._timeout, key, start, opts)
        self._watchers.add(watcher)
        watcher.on_stop = self._watchers.discard
        watcher.start()
        return watcher

    async def close(self) -> None:
        """Stop every open watcher. The client belongs to the caller."""
        for watcher in list(self._watchers):
            await watcher.stop()

