"""The storage interface shared by the etcd3 store (``storage.etcd3``) and the watch
cache (``cacher``), after kube-apiserver's ``storage.Interface``.

Handlers call only this Protocol, so one test suite runs against both implementations.
Keys are full etcd keys (``/registry/pods/ns/name``); list and watch keys are prefixes
ending in ``/``.

Objects cross this boundary in two forms: writes take a decoded ``dict``; reads return
``StoredObject`` — the final JSON bytes with ``metadata.resourceVersion`` set, encoded
once and shared by every response and watcher that serves that version.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

import orjson

if TYPE_CHECKING:
    from storage.errors import CorruptObject
    from storage.selectors import FieldSelector, LabelSelector

# The two JSON types of the whole code base: a decoded JSON object (what every
# Kubernetes object and Status is), and any decoded JSON value (object, array, string,
# number, bool or null: a field's value, a patch).
JSONObject = dict[str, Any]
JSONValue = Any
_T = TypeVar("_T")

# the name a version remembers the protobuf value it was read from under
# (``storage.media_types.STORED_PROTOBUF``)
STORED_VALUE = "application/vnd.kubernetes.protobuf;stored"


class StoredObject:
    """One object version. ``data`` is its JSON with ``metadata.resourceVersion`` set.

    ``obj`` decodes lazily and caches the result; callers must treat it as read-only
    (use ``copy()`` to get a mutable deep copy).
    """

    __slots__ = ("_encodings", "_obj", "data", "key", "resource_version")

    def __init__(
        self, key: str, data: bytes, resource_version: int, obj: JSONObject | None = None
    ) -> None:
        self.key = key
        self.data = data
        self.resource_version = resource_version
        self._obj = obj
        # what ``remember`` and ``derived`` keep: (name, value, name, value, ...) — a
        # watch cache holds one per version, and a tuple of one pair is 56 bytes where
        # a dict was ~200 —, the storage value alone (``STORED_VALUE``: what most cached
        # versions keep, then no tuple at all), or the version whose encodings this
        # copy shares
        self._encodings: tuple[Any, ...] | bytes | StoredObject | None = None

    def encoded(self, media_type: str, encode: Callable[[StoredObject], bytes]) -> bytes:
        """This version in another encoding (protobuf), made by ``encode`` at most once
        and kept with the version (serialize once: a LIST from the watch cache joins
        these bytes, as it joins ``data`` for JSON)."""
        return self.derived(media_type, encode)

    def derived(self, name: str, make: Callable[[StoredObject], _T]) -> _T:
        """What ``make`` derives from this version (a Table row's cells), made at most
        once and kept with the version, as ``encoded`` keeps other encodings."""
        found: _T | None = self.remembered(name)
        if found is None:
            found = make(self)
            self.remember(name, found)
        return found

    def decoded(self) -> JSONObject:
        """The decoded object, read-only: the one already decoded if any, else a
        transient decode that is not kept (unlike ``obj``: a cached version keeps bytes
        only)."""
        if self._obj is not None:
            return self._obj
        decoded: JSONObject = orjson.loads(self.data)
        return decoded

    def remember(self, name: str, data: Any) -> None:
        """Keep ``data`` with this version (the storage value it was read from, so that
        an encoder can start from it instead of from ``data``); see ``remembered``."""
        owner = self._owner()
        kept = owner._kept()
        for i in range(0, len(kept), 2):
            if kept[i] == name:
                owner._set((*kept[:i], name, data, *kept[i + 2 :]))
                return
        owner._set((*kept, name, data))

    def remembered(self, name: str) -> Any | None:
        kept = self._owner()._kept()
        for i in range(0, len(kept), 2):
            if kept[i] == name:
                return kept[i + 1]
        return None

    def forget(self, name: str) -> None:
        owner = self._owner()
        kept = owner._kept()
        for i in range(0, len(kept), 2):
            if kept[i] == name:
                owner._set((*kept[:i], *kept[i + 2 :]))
                return

    def share_encodings(self, other: StoredObject) -> None:
        """From now on keep and find encodings in ``other``'s (the same version: what
        either derives, both have)."""
        self._encodings = other._owner()

    def kept(self) -> tuple[Any, ...]:
        """What this version keeps, as (name, value, ...) pairs (immutable: a new tuple
        replaces it at each change)."""
        return self._owner()._kept()

    def _owner(self) -> StoredObject:
        enc = self._encodings
        return enc if isinstance(enc, StoredObject) else self

    def _kept(self) -> tuple[Any, ...]:
        enc = self._encodings
        if isinstance(enc, bytes):
            return (STORED_VALUE, enc)
        return enc if isinstance(enc, tuple) else ()

    def _set(self, kept: tuple[Any, ...]) -> None:
        if len(kept) == 2 and kept[0] == STORED_VALUE and isinstance(kept[1], bytes):
            self._encodings = kept[1]
        else:
            self._encodings = kept or None

    @property
    def obj(self) -> JSONObject:
        if self._obj is None:
            self._obj = orjson.loads(self.data)
        return self._obj

    def copy(self) -> JSONObject:
        decoded: JSONObject = orjson.loads(self.data)
        return decoded

    def __repr__(self) -> str:
        return f"StoredObject({self.key!r}, rv={self.resource_version})"


# Attributes a selector can see: (labels, selectable fields) of one object.
AttrsFunc = Callable[[JSONObject], tuple[Mapping[str, str], Mapping[str, str]]]


@dataclass(frozen=True, slots=True)
class SelectionPredicate:
    """Label and field selectors plus paging, as in kube-apiserver's storage.SelectionPredicate.

    ``label``/``field`` None means "everything". ``get_attrs`` extracts the resource's
    labels and selectable fields (``storage.fields.attrs_func(resource)``).
    """

    label: LabelSelector | None = None
    field: FieldSelector | None = None
    get_attrs: AttrsFunc | None = None
    limit: int = 0
    continue_token: str = ""

    @property
    def empty(self) -> bool:
        return (self.label is None or self.label.empty) and (self.field is None or self.field.empty)

    def matches(self, obj: JSONObject) -> bool:
        if self.empty:
            return True
        assert self.get_attrs is not None, "a selector needs get_attrs"
        labels, fields = self.get_attrs(obj)
        if self.label is not None and not self.label.matches(labels):
            return False
        return self.field is None or self.field.matches(fields)


ResourceVersionMatch = Literal["", "Exact", "NotOlderThan"]


class PageSink(Protocol):
    """Takes a LIST's items while storage still reads the rest (``ListOptions.sink``).

    A store that reads a whole list from etcd in pages hands each page's items over as
    soon as it has decoded them, in order, while etcd reads the next page: the caller's
    own work per item (printing a Table's rows) overlaps that reading instead of
    following it. ``restart`` drops what was taken: the store reads the list again from
    its start (etcd compacted it mid-walk). Every other read (a cache, one page with a
    limit) never calls the sink; the result's ``items`` are the list in every case, so a
    caller uses what it took only when that is exactly them."""

    async def take(self, items: Sequence[StoredObject]) -> None: ...

    def restart(self) -> None: ...


@dataclass(frozen=True, slots=True)
class GetOptions:
    resource_version: str = ""  # "" = quorum read from etcd; "0" = any; "N" = not older than N
    ignore_not_found: bool = False


@dataclass(frozen=True, slots=True)
class ListOptions:
    """Options of get_list and watch. Validation (the 422/400 messages) happens in the
    REST layer before storage is called; storage still raises InvalidResourceVersion for
    an unparsable resource_version."""

    resource_version: str = ""
    resource_version_match: ResourceVersionMatch = ""
    predicate: SelectionPredicate = field(default_factory=SelectionPredicate)
    recursive: bool = True
    # list only: who takes the items page by page as etcd is read (see PageSink)
    sink: PageSink | None = field(default=None, compare=False, repr=False)
    # watch only
    send_initial_events: bool | None = None
    allow_watch_bookmarks: bool = False
    # the watch's server-side deadline in seconds (timeoutSeconds, or the REST layer's
    # defaulted 1800 s x [1, 2)); the stream ends cleanly then. None = no deadline.
    timeout_seconds: float | None = None
    # (apiVersion, kind) of the watched resource, for BOOKMARK objects a store builds
    # itself (the etcd3 watcher's initial-events-end bookmark; the cacher knows its kind).
    # Unset: the kind of the first initial object, or a bookmark with metadata only.
    bookmark_kind: tuple[str, str] | None = None


@dataclass(frozen=True, slots=True)
class ListResult:
    items: Sequence[StoredObject]
    resource_version: int
    continue_token: str = ""
    remaining_item_count: int | None = None
    # cost accounting, for metrics and the X-Watchcache-* headers
    served_from: Literal["etcd", "cache"] = "etcd"
    fetched: int = 0  # objects read from storage (etcd kvs, or cache entries examined)
    evaluated: int = 0  # objects tested against the selector


@dataclass(frozen=True, slots=True)
class Preconditions:
    """kube-apiserver's ``storage.Preconditions`` of a delete or update."""

    uid: str | None = None
    resource_version: str | None = None

    def check(self, key: str, obj: JSONObject) -> None:
        """``Preconditions.Check``: PreconditionFailed with the upstream wording."""
        from storage.errors import PreconditionFailed

        meta = obj.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        uid, rv = str(meta.get("uid", "")), str(meta.get("resourceVersion", ""))
        if self.uid is not None and self.uid != uid:
            raise PreconditionFailed(
                f"Precondition failed: UID in precondition: {self.uid}, UID in object meta: {uid}",
                key,
            )
        if self.resource_version is not None and self.resource_version != rv:
            raise PreconditionFailed(
                "Precondition failed: ResourceVersion in precondition: "
                f"{self.resource_version}, ResourceVersion in object meta: {rv}",
                key,
            )


EventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One event of a watch stream.

    ``data`` is the event's object as final JSON bytes (for ERROR: a Status). The HTTP
    layer frames it as ``{"type":T,"object":<data>}\n`` without re-encoding.
    """

    type: EventType
    data: bytes
    resource_version: int


class Watcher(Protocol):
    """An open watch: iterate for events; ``stop()`` ends it (idempotent). Iteration
    ends when the server side closes the watch (timeout, slow consumer, re-list)."""

    def __aiter__(self) -> AsyncIterator[WatchEvent]: ...

    async def stop(self) -> None: ...


# try_update receives a private mutable copy of the current object and returns the
# desired new object (or raises a StorageError / any error the caller translates).
UpdateFunc = Callable[[JSONObject], Awaitable[JSONObject]]
ValidateDeletion = Callable[[JSONObject], Awaitable[None]]


class Interface(Protocol):
    """kube-apiserver's storage.Interface, in Python.

    Errors: everything in ``storage.errors``; nothing else escapes (etcd errors are
    translated inside the implementation).
    """

    async def create(self, key: str, obj: JSONObject) -> StoredObject:
        """Store ``obj`` at ``key`` if absent (AlreadyExists otherwise). ``obj`` must not
        carry a resourceVersion; the result carries the write revision."""
        ...

    async def get(self, key: str, opts: GetOptions) -> StoredObject:
        """One object (NotFound if absent), per the resourceVersion semantics of opts."""
        ...

    async def get_list(self, key: str, opts: ListOptions) -> ListResult:
        """Objects under the prefix ``key`` matching ``opts.predicate``, one consistent
        revision, paged by limit/continue."""
        ...

    async def guaranteed_update(
        self,
        key: str,
        preconditions: Preconditions | None,
        try_update: UpdateFunc,
        *,
        ignore_not_found: bool = False,
        cached_existing_object: StoredObject | None = None,
    ) -> StoredObject:
        """Optimistic read-modify-write loop on mod_revision, retried on races. If the
        new encoding equals the stored bytes nothing is written and the current version
        is returned. With ``ignore_not_found`` an absent key is passed to try_update as
        an empty dict (create-on-update). ``cached_existing_object``: a copy of the
        object that may be stale, tried before reading etcd (upstream's
        cachedExistingObject; the watch cache passes its own, ignoring the caller's)."""
        ...

    async def delete(
        self,
        key: str,
        preconditions: Preconditions | None = None,
        validate_deletion: ValidateDeletion | None = None,
        *,
        ignore_store_read_error: bool = False,
        cached_existing_object: StoredObject | None = None,
    ) -> StoredObject:
        """Delete guarded by mod_revision; returns the last state with the deletion
        revision as its resourceVersion. ``ignore_store_read_error``: delete a value that
        cannot be decoded (InvalidObject if it decodes; an empty result).
        ``cached_existing_object``: as in ``guaranteed_update``."""
        ...

    async def watch(self, key: str, opts: ListOptions) -> Watcher:
        """Start a watch on ``key`` (a prefix when opts.recursive). Raises Expired /
        TooLargeResourceVersion synchronously only when the REST layer must answer with
        an HTTP error; a too-old RV is delivered as an ERROR event instead."""
        ...

    async def current_resource_version(self) -> int:
        """etcd's current revision (a quorum read; upstream's GetCurrentResourceVersion)."""
        ...

    async def count(self, key: str) -> int: ...

    def readiness_check(self) -> None:
        """Raise NotReady (naming why) while this storage cannot serve (upstream's
        ``ReadinessCheck``): a watch cache (re)initializing or restarting. The etcd3
        store is always ready (etcd's own health is checked elsewhere)."""
        ...

    async def close(self) -> None: ...


# -- what a watch cache needs of the storage under it ---------------------------------------


@dataclass(frozen=True, slots=True)
class ListPage:
    """A slice of a LIST read for a watch cache: every value under the prefix at
    ``resource_version``, decoded (``StoredObject.obj`` set), with the values that could
    not be decoded reported in ``corrupt`` instead of failing the whole list."""

    items: Sequence[StoredObject]
    corrupt: Sequence[CorruptObject]
    resource_version: int


@dataclass(frozen=True, slots=True)
class Change:
    """One change of a key as a watch cache consumes it. ``object`` is the new version
    (decoded) or None for a delete; ``corrupt`` is set (and ``object`` None) when the new
    value could not be decoded."""

    key: str
    object: StoredObject | None
    resource_version: int
    corrupt: CorruptObject | None = None


@dataclass(frozen=True, slots=True)
class ChangeBatch:
    """Changes in revision order, or (``changes`` empty) a progress notification: every
    change up to ``progress`` has been delivered."""

    changes: Sequence[Change] = ()
    progress: int = 0


class ChangeStream(Protocol):
    """An etcd watch of a prefix for a watch cache. Iteration raises Expired when the
    start revision was compacted and other ``storage.errors`` when the watch fails; it
    ends when etcd ends the watch. ``stop()`` cancels it (idempotent)."""

    def __aiter__(self) -> AsyncIterator[ChangeBatch]: ...

    async def stop(self) -> None: ...


class ListerWatcher(Protocol):
    """The storage floor as a watch cache uses it (kube-apiserver's cacher reads through
    its ``storage.Interface``: GetList and Watch for the reflector, GetCurrentResourceVersion
    and RequestWatchProgress for consistent reads). Every call goes through the store's
    error translation and etcd_request_duration_seconds; nothing but ``storage.errors``
    escapes."""

    def list_pages(self, prefix: str, *, page_size: int) -> AsyncGenerator[ListPage, None]:
        """Everything under ``prefix`` at one revision (the first page's), in pages of at
        most ``page_size`` keys read from etcd and decoded in bounded slices."""
        ...

    def watch_changes(self, prefix: str, start_revision: int) -> ChangeStream:
        """Changes under ``prefix`` from ``start_revision``, with progress notifications."""
        ...

    async def current_resource_version(self) -> int: ...

    async def supports_request_watch_progress(self) -> bool:
        """Whether etcd's progress notifications can be trusted (etcd ≥ 3.4.31 / 3.5.13;
        upstream's feature support checker for RequestWatchProgress)."""
        ...

    async def request_watch_progress(self, prefix: str = "") -> None:
        """Ask etcd for a progress notification on the watch stream of ``prefix``'s
        changes (``watch_changes``: one stream per prefix, so that another resource's
        watch catching up never makes etcd drop the request)."""
        ...
