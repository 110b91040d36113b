"""The committed generated modules are exactly what ``make proto`` produces, and the wire
format (field numbers) is etcd's."""

from __future__ import annotations

from pathlib import Path

from google.protobuf.message import Message

from etcdclient import protogen
from etcdclient._pb import kv_pb2, rpc_pb2


def test_committed_modules_match_regeneration(tmp_path: Path) -> None:
    written = protogen.generate(tmp_path / "_pb")
    committed = protogen.PACKAGE_DIR / "_pb"
    names = sorted(p.name for p in written)
    assert names == sorted(
        p.name for p in committed.iterdir() if p.is_file() and p.suffix in (".py", ".pyi")
    )
    for path in written:
        assert path.read_bytes() == (committed / path.name).read_bytes(), path.name


def _numbers(message: type[Message]) -> dict[str, int]:
    return {f.name: f.number for f in message.DESCRIPTOR.fields}


def test_field_numbers_are_etcds() -> None:
    assert _numbers(kv_pb2.KeyValue) == {
        "key": 1, "create_revision": 2, "mod_revision": 3, "version": 4, "value": 5, "lease": 6,
    }  # fmt: skip
    assert _numbers(kv_pb2.Event) == {"type": 1, "kv": 2, "prev_kv": 3}
    assert _numbers(rpc_pb2.WatchCreateRequest) == {
        "key": 1, "range_end": 2, "start_revision": 3, "progress_notify": 4, "filters": 5,
        "prev_kv": 6, "watch_id": 7, "fragment": 8,
    }  # fmt: skip
    assert _numbers(rpc_pb2.WatchResponse) == {
        "header": 1, "watch_id": 2, "created": 3, "canceled": 4, "compact_revision": 5,
        "cancel_reason": 6, "fragment": 7, "events": 11,
    }  # fmt: skip
    assert _numbers(rpc_pb2.WatchRequest) == {
        "create_request": 1, "cancel_request": 2, "progress_request": 3,
    }  # fmt: skip
    assert _numbers(rpc_pb2.Compare)["range_end"] == 64
    assert _numbers(rpc_pb2.StatusResponse)["dbSizeInUse"] == 9
    assert _numbers(rpc_pb2.RangeRequest)["count_only"] == 9
    assert rpc_pb2.DESCRIPTOR.package == "etcdserverpb"
    assert kv_pb2.DESCRIPTOR.package == "mvccpb"
