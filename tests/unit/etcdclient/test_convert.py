"""Pure conversions and error translation."""

from __future__ import annotations

import grpc
import pytest

from etcdclient import _convert
from etcdclient._endpoints import parse_endpoint
from etcdclient._pb import kv_pb2, rpc_pb2
from etcdclient._translate import RevisionOutOfRange, translate
from etcdclient.errors import (
    ConfigError,
    DeadlineExceeded,
    EtcdError,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    Unavailable,
)
from etcdclient.types import KeyValue
from tests.unit.etcdclient.fakes import rpc_error


@pytest.mark.parametrize(
    ("prefix", "end"),
    [(b"/a/", b"/a0"), (b"a\xff", b"b"), (b"a\xff\xff", b"b"), (b"\xff", b"\x00"),
     (b"", b"\x00")],
)  # fmt: skip
def test_prefix_end(prefix: bytes, end: bytes) -> None:
    assert _convert.prefix_end(prefix) == end


def _txn(succeeded: bool, op: rpc_pb2.ResponseOp, rev: int = 9) -> rpc_pb2.TxnResponse:
    return rpc_pb2.TxnResponse(
        header=rpc_pb2.ResponseHeader(revision=rev), succeeded=succeeded, responses=[op]
    )


def test_guarded_put_request_and_results() -> None:
    req = _convert.guarded_put(b"/k", b"v", 5, 7)
    [cmp] = req.compare
    assert (cmp.key, cmp.mod_revision, cmp.target, cmp.result) == (
        b"/k", 5, rpc_pb2.Compare.MOD, rpc_pb2.Compare.EQUAL,
    )  # fmt: skip
    assert req.success[0].request_put.prev_kv and req.failure[0].request_range.key == b"/k"

    prev = kv_pb2.KeyValue(key=b"/k", value=b"o", create_revision=2, mod_revision=5, version=3)
    ok = _txn(True, rpc_pb2.ResponseOp(response_put=rpc_pb2.PutResponse(prev_kv=prev)))
    assert _convert.put_txn_result(ok, b"/k", b"v", 7).kv == KeyValue(b"/k", b"v", 2, 9, 4, 7)
    fresh = _txn(True, rpc_pb2.ResponseOp(response_put=rpc_pb2.PutResponse()))
    assert _convert.put_txn_result(fresh, b"/k", b"v", 0).kv == KeyValue(b"/k", b"v", 9, 9, 1)
    current = rpc_pb2.ResponseOp(response_range=rpc_pb2.RangeResponse(kvs=[prev]))
    failed = _convert.put_txn_result(_txn(False, current), b"/k", b"v", 0)
    assert not failed.succeeded and failed.kv == KeyValue(b"/k", b"o", 2, 5, 3)
    absent = _txn(False, rpc_pb2.ResponseOp(response_range=rpc_pb2.RangeResponse()))
    assert _convert.put_txn_result(absent, b"/k", b"v", 0).kv is None


def test_guarded_delete_result() -> None:
    prev = kv_pb2.KeyValue(key=b"/k", value=b"o", create_revision=2, mod_revision=5, version=3)
    ok = _txn(True, rpc_pb2.ResponseOp(
        response_delete_range=rpc_pb2.DeleteRangeResponse(deleted=1, prev_kvs=[prev])))  # fmt: skip
    res = _convert.delete_txn_result(ok)
    assert res.succeeded and res.revision == 9 and res.kv == KeyValue(b"/k", b"o", 2, 5, 3)
    req = _convert.guarded_delete(b"/k", 5)
    assert req.success[0].request_delete_range.prev_kv


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        (grpc.StatusCode.UNAVAILABLE, Unavailable),
        (grpc.StatusCode.DEADLINE_EXCEEDED, DeadlineExceeded),
        (grpc.StatusCode.INVALID_ARGUMENT, InvalidArgument),
        (grpc.StatusCode.PERMISSION_DENIED, PermissionDenied),
        (grpc.StatusCode.UNAUTHENTICATED, PermissionDenied),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, ResourceExhausted),
        (grpc.StatusCode.NOT_FOUND, NotFound),
        (grpc.StatusCode.OUT_OF_RANGE, RevisionOutOfRange),
        (grpc.StatusCode.INTERNAL, EtcdError),
    ],
)
def test_translate_by_code_only(code: grpc.StatusCode, cls: type[EtcdError]) -> None:
    # The message says "compacted" but the code decides.
    err = translate(rpc_error(code, "mvcc: required revision has been compacted"), "e1")
    assert type(err) is cls
    assert str(err).startswith(f"e1: {code.name}")


def test_parse_endpoint() -> None:
    assert parse_endpoint("http://127.0.0.1:2379", tls_default=False) == ("127.0.0.1:2379", False)
    assert parse_endpoint("https://h:1", tls_default=False) == ("h:1", True)
    assert parse_endpoint("h:1", tls_default=True) == ("h:1", True)
    assert parse_endpoint("http://[::1]:5", tls_default=False) == ("[::1]:5", False)
    with pytest.raises(ConfigError):
        parse_endpoint("unix:///x", tls_default=False)
    with pytest.raises(ConfigError):
        parse_endpoint("http://h:notaport", tls_default=False)


def test_fast_key_value_equals_the_dataclass_constructor() -> None:
    pb = kv_pb2.KeyValue(
        key=b"/k", value=b"v", create_revision=2, mod_revision=5, version=3, lease=7
    )
    kv = _convert.key_value(pb)
    assert kv == KeyValue(b"/k", b"v", 2, 5, 3, 7)
    assert hash(kv) == hash(KeyValue(b"/k", b"v", 2, 5, 3, 7))
    assert repr(kv) == repr(KeyValue(b"/k", b"v", 2, 5, 3, 7))
    with pytest.raises(AttributeError):
        kv.value = b"x"  # type: ignore[misc]  # still frozen
