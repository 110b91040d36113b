"""LIST from etcd (kube-apiserver's ``storage/etcd3/store.go`` ``store.GetList``).

Which revision is read:

- a continue token: the token's revision (rv -1: the latest); a resourceVersion other
  than ""/"0" with it is a 400;
- ``Exact`` N, or the legacy exact form (N > 0 with a limit and no match): revision N;
- otherwise (unset, "0", NotOlderThan N): the latest, and N newer than etcd's revision
  is TooLargeResourceVersion.

The list's resourceVersion is the revision read. Selectors are applied here: etcd
knows nothing of labels or fields, so with a selector the store keeps reading at the
fixed revision, doubling the batch (up to 10,000) until the page is full or the keys
run out. remainingItemCount is set only when more remain and there is no selector.
Compaction: Expired — for a continue token with a fresh token (rv -1) to go on with.

A list without a limit is not one Range of the whole prefix: that held the gRPC
message, the parsed RangeResponse, the client's KeyValues and the StoredObjects all at
once (4x the JSON of 50,000 pods at peak). It is read in pages at
ONE revision — the first page's header revision, or the revision asked for — each page
decoded into StoredObjects and dropped while the next is fetched (asked for when the
one before arrives: etcd's work on it overlaps the loop's decoding), so the result is
the same snapshot a single Range would give. One difference: etcd may compact between two
pages. If the list was at the latest revision (nothing asked the caller for one), it is
read again from scratch once; a second compaction mid-walk, or a compaction of a
revision the caller asked for, is Expired as for a compacted single read.

etcd limits a Range by keys, not bytes, so the page size follows the values seen so
far: ``FIRST_PAGE`` keys, then as many as make ~``PAGE_BYTES`` at the average value
size, never more than ``page_size`` (injectable, ``PAGE_SIZE`` by default). A filtered
list's growing batches obey the same byte bound. Values are decoded and matched in
slices of at most ``STEP_SECONDS`` with a yield to the event loop between slices (a
count of values bounded nothing: 500 pods cost 4 ms unfiltered and 10-27 ms with a
selector). A selector is matched against the attributes the watch cache computed for
the version read (``known_versions.held``) when it holds that version; only other
versions are decoded to be matched.

``ListOptions.sink``, when set, takes each page's items of such a walk as soon as they
are decoded, before the walk waits for the next page (``storage.interfaces.PageSink``):
what the caller does per item (a Table's rows) runs while etcd reads the next page, not
after the whole list; a read again from scratch restarts it. A list with a limit hands
it nothing.

Corrupt values (kube-apiserver 1.37 with AllowUnsafeMalformedObjectDeletion, the
default): the walk goes on, collecting up to ``StoreReadError.MAX_CORRUPT`` of them, and
the list fails with ``StoreReadError`` naming them; without the gate the first one fails
it with ``InternalStorageError``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from etcdclient import EtcdClient, prefix_end
from etcdclient import errors as etcd_errors
from etcdclient.types import RangeResult
from storage import codec, known_versions
from storage.continue_token import decode_continue, encode_continue
from storage.errors import (
    CorruptObject,
    Expired,
    InternalStorageError,
    InvalidContinue,
    StoreReadError,
    TooLargeResourceVersion,
)
from storage.etcd3.translate import CONTINUE_TOO_OLD, LIST_TOO_OLD, call
from storage.interfaces import ListOptions, ListResult, SelectionPredicate, StoredObject
from storage.resource_version import parse_resource_version

# The largest batch the store grows to while filtering (upstream maxLimit).
MAX_LIMIT = 10_000
# Paging of a list without a limit: at most PAGE_SIZE keys per etcd Range, FIRST_PAGE
# keys in the first one (value sizes still unknown), then about PAGE_BYTES of values per
# Range (~250 pods of 4 KB: each page costs about three times its size while decoded).
# The gRPC response of one Range is parsed in one step of the event loop: 8 MB pages
# held it ~100 ms each, so 20 concurrent large LISTs made others wait (issue 23 §8).
PAGE_SIZE = 10_000
FIRST_PAGE = 500
PAGE_BYTES = 1024 * 1024
# The longest stretch of decoding and matching between two yields to the event loop,
# checked every CHECK_EVERY values (a clock read costs ~50 ns, a value 2-20 µs).
STEP_SECONDS = 0.002
CHECK_EVERY = 16
# Turns of the event loop before a page's Range is on the wire: tasks of its own send
# it (the read's, then gRPC's call task). Measured: after 3 turns the answer to a Range
# asked for before 20 ms of work is in when the work ends; after none, all its read is
# still to come.
SEND_TURNS = 3


@dataclass(slots=True)
class _Plan:
    """What to read: keys from ``start`` to the end of ``prefix`` at ``revision``
    (0 = latest, fixed after the first batch)."""

    prefix: str
    start: str
    revision: int = 0
    minimum: int = 0  # the resourceVersion the result must not be older than
    continue_key: str = ""  # the decoded start key of a continue token, if any
    aggregate_corrupt: bool = True  # the AllowUnsafeMalformedObjectDeletion gate


@dataclass(slots=True)
class _Page:
    items: list[StoredObject] = field(default_factory=list)
    fetched: int = 0
    # keys and value bytes received so far (size the next Range, which may be asked
    # for before the last one is decoded)
    received: int = 0
    received_bytes: int = 0
    evaluated: int = 0
    last_key: bytes = b""
    has_more: bool = False
    corrupt: list[CorruptObject] = field(default_factory=list)
    aggregate_corrupt: bool = True

    def receive(self, resp: RangeResult) -> None:
        self.received += len(resp.kvs)
        self.received_bytes += sum(len(kv.value) for kv in resp.kvs)

    def limit_by_bytes(self, limit: int) -> int:
        """``limit`` keys, or fewer when the values received so far say that many would
        be more than ~PAGE_BYTES."""
        if not self.received_bytes:
            return limit
        return max(1, min(limit, PAGE_BYTES * self.received // self.received_bytes))

    def check(self) -> None:
        """StoreReadError once values could not be decoded (the walk is over, or the cap
        of corrupt values was reached)."""
        if self.corrupt:
            cap = StoreReadError.MAX_CORRUPT
            raise StoreReadError(self.corrupt[:cap], too_many=len(self.corrupt) >= cap)


async def list_objects(
    client: EtcdClient,
    request_timeout: float,
    key: str,
    opts: ListOptions,
    *,
    page_size: int = PAGE_SIZE,
    aggregate_corrupt: bool = True,
) -> ListResult:
    """One page of the objects under ``key`` matching ``opts.predicate``; without a
    limit, all of them, read from etcd in pages of at most ``page_size`` keys at one
    revision. ``aggregate_corrupt``: the AllowUnsafeMalformedObjectDeletion gate."""
    plan = _plan(key, opts)
    plan.aggregate_corrupt = aggregate_corrupt
    if opts.predicate.limit <= 0 and opts.recursive:
        return await _list_all(client, request_timeout, plan, opts, page_size)
    return await _list_page(client, request_timeout, plan, opts)


async def _list_page(
    client: EtcdClient, request_timeout: float, plan: _Plan, opts: ListOptions
) -> ListResult:
    """A list with a limit (or of one key): batches at one revision until it is full."""
    pred = opts.predicate
    page = _Page(aggregate_corrupt=plan.aggregate_corrupt)
    limit = pred.limit
    resp = await _read(client, request_timeout, plan, opts, limit)
    while True:
        page.receive(resp)
        await _take(page, resp, pred)
        full = len(page.items) >= pred.limit or len(page.corrupt) >= StoreReadError.MAX_CORRUPT
        if pred.limit <= 0 or not page.has_more or full:
            break
        # Selector dropped objects: read on at the same revision, in bigger batches
        # (doubling up to MAX_LIMIT keys, and never much more than PAGE_BYTES of values).
        limit = page.limit_by_bytes(min(limit * 2, MAX_LIMIT))
        plan.start = page.last_key.decode() + "\x00"
        plan.revision = plan.revision or resp.revision
        resp = await _read(client, request_timeout, plan, opts, limit)
    page.check()
    revision = plan.revision or resp.revision
    token, remaining = "", None
    if page.has_more:
        token = encode_continue(page.last_key.decode() + "\x00", plan.prefix, revision)
        if pred.empty:
            remaining = resp.count - pred.limit
    return ListResult(
        items=page.items,
        resource_version=revision,
        continue_token=token,
        remaining_item_count=remaining,
        served_from="etcd",
        fetched=page.fetched,
        evaluated=page.evaluated,
    )


async def _list_all(
    client: EtcdClient, request_timeout: float, plan: _Plan, opts: ListOptions, page_size: int
) -> ListResult:
    """Every object under the prefix (matching the predicate), one page at a time."""
    start, latest = plan.start, plan.revision == 0
    try:
        return await _walk(client, request_timeout, plan, opts, page_size)
    except _CompactedMidWalk as mid:
        if not latest:
            raise mid.expired from None
    # Compacted between two pages of a read at the latest revision: a single Range
    # could not have seen that, so read the latest state again, once.
    plan.start, plan.revision = start, 0
    if opts.sink is not None:
        opts.sink.restart()
    try:
        return await _walk(client, request_timeout, plan, opts, page_size)
    except _CompactedMidWalk as mid:
        raise mid.expired from None


class _CompactedMidWalk(Exception):
    """etcd compacted the walk's revision after its first page was read."""

    def __init__(self, expired: Expired) -> None:
        super().__init__(str(expired))
        self.expired = expired


async def _walk(
    client: EtcdClient, request_timeout: float, plan: _Plan, opts: ListOptions, page_size: int
) -> ListResult:
    """Each page is asked for as soon as the one before has arrived, and sent (``_sent``)
    before that one is decoded: etcd reads and sends page N+1 (~15 ms for 1 MiB) while
    the loop decodes page N (and the sink takes it), instead of one after the other. At
    most two pages' responses are held."""
    page = _Page(aggregate_corrupt=plan.aggregate_corrupt)
    resp = await _read(client, request_timeout, plan, opts, min(page_size, FIRST_PAGE))
    # Every further page at the first one's revision: one snapshot.
    revision = plan.revision = plan.revision or resp.revision
    ahead: asyncio.Future[RangeResult] | None = None
    try:
        while True:
            page.receive(resp)
            if resp.more:
                plan.start = resp.kvs[-1].key.decode() + "\x00"
                limit = page.limit_by_bytes(page_size)
                ahead = asyncio.ensure_future(_read(client, request_timeout, plan, opts, limit))
                await _sent()
            taken = len(page.items)
            await _take(page, resp, opts.predicate)
            if opts.sink is not None and not page.corrupt:  # a failing list's rows: no use
                await opts.sink.take(page.items[taken:])
            if ahead is None or len(page.corrupt) >= StoreReadError.MAX_CORRUPT:
                break
            try:
                resp = await ahead
            except Expired as e:
                raise _CompactedMidWalk(e) from None
            ahead = None
    finally:
        if ahead is not None and not ahead.done():  # the walk failed or stopped early
            ahead.cancel()
            ahead.add_done_callback(_retrieved)
    page.check()
    return ListResult(
        items=page.items,
        resource_version=revision,
        served_from="etcd",
        fetched=page.fetched,
        evaluated=page.evaluated,
    )


async def _sent() -> None:
    """Let a Range just asked for reach etcd before the loop is held by decoding: asked
    for and not sent, it would leave only at the next yield, and etcd's work on it
    would follow the decoding instead of running beside it."""
    for _ in range(SEND_TURNS):
        await asyncio.sleep(0)


def _retrieved(read: asyncio.Future[RangeResult]) -> None:
    """Take the outcome of a page read nobody waits for any more (no 'never retrieved')."""
    if not read.cancelled():
        read.exception()


def _plan(key: str, opts: ListOptions) -> _Plan:
    prefix = key if not opts.recursive or key.endswith("/") else key + "/"
    minimum = parse_resource_version(opts.resource_version)
    pred = opts.predicate
    plan = _Plan(prefix=prefix, start=prefix, minimum=minimum)
    if opts.recursive and pred.continue_token:
        plan.continue_key, continue_rv = decode_continue(pred.continue_token, prefix)
        if opts.resource_version not in ("", "0"):
            raise InvalidContinue("specifying resource version is not allowed when using continue")
        plan.start = plan.continue_key
        plan.revision = max(continue_rv, 0)  # rv < 0: the latest
        return plan
    match = opts.resource_version_match
    if match == "Exact":
        plan.revision = minimum
    elif match == "" and opts.recursive and pred.limit > 0 and minimum > 0:
        plan.revision = minimum  # legacy exact: RV=N with a limit
    elif match not in ("", "NotOlderThan"):
        raise InternalStorageError(f"unknown ResourceVersionMatch value: {match}", key)
    return plan


async def _read(
    client: EtcdClient, request_timeout: float, plan: _Plan, opts: ListOptions, limit: int
) -> RangeResult:
    start = plan.start.encode()
    end = prefix_end(plan.prefix.encode()) if opts.recursive else None
    try:
        resp = await call(
            client.range(start, end, limit=max(limit, 0), revision=plan.revision),
            request_timeout,
            plan.prefix,
            operation="list",
            raw=(etcd_errors.Compacted, etcd_errors.FutureRevision),
        )
    except etcd_errors.Compacted:
        raise _compacted(plan) from None
    except etcd_errors.FutureRevision:
        current = await call(client.get(start), request_timeout, plan.prefix, operation="get")
        raise TooLargeResourceVersion(plan.revision, current.revision) from None
    if plan.minimum > resp.revision:
        raise TooLargeResourceVersion(plan.minimum, resp.revision)
    if not resp.kvs and resp.more:
        raise InternalStorageError(
            "no results were found, but etcd indicated there were more values remaining",
            plan.prefix,
        )
    return resp


def _compacted(plan: _Plan) -> Expired:
    if not plan.continue_key:
        return Expired(LIST_TOO_OLD)
    return Expired(CONTINUE_TOO_OLD, encode_continue(plan.continue_key, plan.prefix, -1))


async def _take(page: _Page, resp: RangeResult, pred: SelectionPredicate) -> None:
    """Decode and filter one batch into the page, stopping when the page is full (or
    holds the most corrupt values a list reports), yielding to the event loop after
    every STEP_SECONDS of work."""
    page.fetched += len(resp.kvs)
    page.has_more = resp.more
    slice_end = time.perf_counter() + STEP_SECONDS
    for n, kv in enumerate(resp.kvs):
        if (pred.limit > 0 and len(page.items) >= pred.limit) or len(
            page.corrupt
        ) >= StoreReadError.MAX_CORRUPT:
            page.has_more = True
            break
        if n % CHECK_EVERY == 0 and n and time.perf_counter() > slice_end:
            await asyncio.sleep(0)  # let requests run between slices
            slice_end = time.perf_counter() + STEP_SECONDS
        page.last_key = kv.key
        page.evaluated += 1
        try:
            _take_one(page, kv.key.decode(), kv.value, kv.mod_revision, pred)
        except CorruptObject as err:
            if not page.aggregate_corrupt:
                raise InternalStorageError(
                    f"unable to decode object at {err.key}: {err.detail}", err.key
                ) from err
            page.corrupt.append(err)


def _take_one(page: _Page, key: str, value: bytes, rev: int, pred: SelectionPredicate) -> None:
    if pred.empty:
        page.items.append(codec.decode(key, value, rev))
        return
    held = known_versions.held(key, rev)
    if held is not None:  # the cache's attributes of this very version: nothing to decode
        if held.matches(pred):
            page.items.append(known_versions.share(held.stored))
        return
    # Parse once to match; only a match pays for its final bytes.
    obj = codec.decode_object(key, value, rev)
    try:
        matched = pred.matches(obj)
    except (TypeError, AttributeError, ValueError) as err:  # labels/fields of the wrong type
        raise CorruptObject(key, f"unreadable attributes: {err}", rev) from err
    if matched:
        page.items.append(codec.from_parsed(key, value, rev, obj))
