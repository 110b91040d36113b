"""Pure conversions between the generated protobuf messages and ``etcdclient.types``.

No I/O here, so request building and response parsing are unit-tested without etcd.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack

from etcdclient._pb import kv_pb2, rpc_pb2
from etcdclient.types import (
    Event,
    EventType,
    GetResult,
    KeyValue,
    Member,
    RangeOptions,
    RangeResult,
    Status,
    TxnResult,
)

_MOD = rpc_pb2.Compare.CompareTarget.MOD
_EQUAL = rpc_pb2.Compare.CompareResult.EQUAL
_FILTERS: dict[str, rpc_pb2.WatchCreateRequest.FilterType] = {
    "noput": rpc_pb2.WatchCreateRequest.FilterType.NOPUT,
    "nodelete": rpc_pb2.WatchCreateRequest.FilterType.NODELETE,
}


def prefix_end(prefix: bytes) -> bytes:
    """The ``range_end`` that makes [prefix, range_end) cover every key starting with prefix.

    Like etcd's ``GetPrefixRangeEnd``: increment the last byte below 0xff, dropping trailing
    0xff bytes; an empty or all-0xff prefix gives ``b"\\x00"`` (every key from ``prefix``).
    """
    end = bytearray(prefix)
    while end:
        if end[-1] < 0xFF:
            end[-1] += 1
            return bytes(end)
        end.pop()
    return b"\x00"


# KeyValue is a frozen slotted dataclass whose __init__ sets each of its six slots through
# object.__setattr__; building 10,000 of them per LIST made that a third of the client's
# overhead over the raw stub. key_value() fills the slots directly through their
# descriptors instead: the same object (equality is checked by a unit test), ~2x faster.
_new = object.__new__
_slot: dict[str, Any] = {name: KeyValue.__dict__[name] for name in KeyValue.__slots__}
_set_key = _slot["key"].__set__
_set_value = _slot["value"].__set__
_set_create = _slot["create_revision"].__set__
_set_mod = _slot["mod_revision"].__set__
_set_version = _slot["version"].__set__
_set_lease = _slot["lease"].__set__


def key_value(kv: kv_pb2.KeyValue) -> KeyValue:
    out: KeyValue = _new(KeyValue)
    _set_key(out, kv.key)
    _set_value(out, kv.value)
    _set_create(out, kv.create_revision)
    _set_mod(out, kv.mod_revision)
    _set_version(out, kv.version)
    _set_lease(out, kv.lease)
    return out


def event(ev: kv_pb2.Event) -> Event:
    prev = key_value(ev.prev_kv) if ev.HasField("prev_kv") else None
    return Event(EventType(ev.type), key_value(ev.kv), prev)


def range_request(
    key: bytes, range_end: bytes | None = None, **options: Unpack[RangeOptions]
) -> rpc_pb2.RangeRequest:
    return rpc_pb2.RangeRequest(key=key, range_end=range_end or b"", **options)


def range_result(resp: rpc_pb2.RangeResponse) -> RangeResult:
    return RangeResult(
        revision=resp.header.revision,
        kvs=list(map(key_value, resp.kvs)),
        more=resp.more,
        count=resp.count,
    )


def get_result(resp: rpc_pb2.RangeResponse) -> GetResult:
    return GetResult(resp.header.revision, key_value(resp.kvs[0]) if resp.kvs else None)


def _mod_equals(key: bytes, mod_revision: int) -> rpc_pb2.Compare:
    return rpc_pb2.Compare(result=_EQUAL, target=_MOD, key=key, mod_revision=mod_revision)


def _get_op(key: bytes) -> rpc_pb2.RequestOp:
    return rpc_pb2.RequestOp(request_range=rpc_pb2.RangeRequest(key=key))


def guarded_put(
    key: bytes, value: bytes, expected_mod_revision: int, lease: int
) -> rpc_pb2.TxnRequest:
    """If(mod_revision(key) == expected) Put(key, value, prev_kv) Else Get(key)."""
    put = rpc_pb2.PutRequest(key=key, value=value, lease=lease, prev_kv=True)
    return rpc_pb2.TxnRequest(
        compare=[_mod_equals(key, expected_mod_revision)],
        success=[rpc_pb2.RequestOp(request_put=put)],
        failure=[_get_op(key)],
    )


def guarded_delete(key: bytes, expected_mod_revision: int) -> rpc_pb2.TxnRequest:
    """If(mod_revision(key) == expected) DeleteRange(key, prev_kv) Else Get(key)."""
    delete = rpc_pb2.DeleteRangeRequest(key=key, prev_kv=True)
    return rpc_pb2.TxnRequest(
        compare=[_mod_equals(key, expected_mod_revision)],
        success=[rpc_pb2.RequestOp(request_delete_range=delete)],
        failure=[_get_op(key)],
    )


def _failed(resp: rpc_pb2.TxnResponse) -> TxnResult:
    kvs = resp.responses[0].response_range.kvs if resp.responses else ()
    return TxnResult(resp.header.revision, False, key_value(kvs[0]) if kvs else None)


def put_txn_result(resp: rpc_pb2.TxnResponse, key: bytes, value: bytes, lease: int) -> TxnResult:
    """The written kv is rebuilt from the request and the previous kv (etcd returns no
    copy of what it wrote): same create_revision and version + 1, or a fresh key."""
    if not resp.succeeded:
        return _failed(resp)
    rev = resp.header.revision
    put = resp.responses[0].response_put
    if put.HasField("prev_kv"):
        prev = put.prev_kv
        kv = KeyValue(key, value, prev.create_revision, rev, prev.version + 1, lease)
    else:
        kv = KeyValue(key, value, rev, rev, 1, lease)
    return TxnResult(rev, True, kv)


def delete_txn_result(resp: rpc_pb2.TxnResponse) -> TxnResult:
    if not resp.succeeded:
        return _failed(resp)
    prev = resp.responses[0].response_delete_range.prev_kvs
    return TxnResult(resp.header.revision, True, key_value(prev[0]) if prev else None)


def filter_types(filters: Sequence[str]) -> list[rpc_pb2.WatchCreateRequest.FilterType]:
    """etcd's filter enum values for names "NOPUT" / "NODELETE" (case-insensitive);
    ValueError for anything else."""
    try:
        return [_FILTERS[f.lower()] for f in filters]
    except KeyError as e:
        raise ValueError(f"unknown watch filter {e.args[0]!r} (NOPUT, NODELETE)") from None


def watch_create(
    watch_id: int,
    key: bytes,
    range_end: bytes | None,
    start_revision: int,
    *,
    prev_kv: bool,
    progress_notify: bool,
    filters: Sequence[str],
) -> rpc_pb2.WatchRequest:
    """A WatchCreateRequest with our own ``watch_id`` (etcd >= 3.4), fragments allowed."""
    create = rpc_pb2.WatchCreateRequest(
        key=key,
        range_end=range_end or b"",
        start_revision=start_revision,
        progress_notify=progress_notify,
        filters=filter_types(filters),
        prev_kv=prev_kv,
        watch_id=watch_id,
        fragment=True,
    )
    return rpc_pb2.WatchRequest(create_request=create)


def watch_cancel(watch_id: int) -> rpc_pb2.WatchRequest:
    return rpc_pb2.WatchRequest(cancel_request=rpc_pb2.WatchCancelRequest(watch_id=watch_id))


def watch_progress() -> rpc_pb2.WatchRequest:
    return rpc_pb2.WatchRequest(progress_request=rpc_pb2.WatchProgressRequest())


def status(endpoint: str, resp: rpc_pb2.StatusResponse) -> Status:
    return Status(
        endpoint=endpoint,
        version=resp.version,
        revision=resp.header.revision,
        member_id=resp.header.member_id,
        leader=resp.leader,
        raft_term=resp.raftTerm,
        db_size=resp.dbSize,
        db_size_in_use=resp.dbSizeInUse,
        is_learner=resp.isLearner,
        errors=tuple(resp.errors),
    )


def member(m: rpc_pb2.Member) -> Member:
    return Member(m.ID, m.name, tuple(m.peerURLs), tuple(m.clientURLs), m.isLearner)
