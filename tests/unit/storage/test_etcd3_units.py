"""Pure parts of the etcd3 store: error translation, resourceVersion parsing,
preconditions and the watch event transform (no etcd; hand-built etcd events)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import orjson
import pytest

from etcdclient import EtcdClient
from etcdclient import errors as etcd_errors
from etcdclient.types import Event, EventType, KeyValue
from storage import codec, errors
from storage.etcd3 import Etcd3Watcher
from storage.etcd3.translate import LIST_TOO_OLD, call, translate
from storage.fields import attrs_func
from storage.interfaces import ListOptions, Preconditions, SelectionPredicate
from storage.resource_version import parse_resource_version
from storage.selectors import parse_field_selector
from storage.watch_errors import expired_event


@pytest.mark.parametrize(
    ("err", "kind", "is_timeout"),
    [
        (etcd_errors.Unavailable("down"), errors.Unavailable, False),
        (etcd_errors.ClientClosed("closed"), errors.Unavailable, False),
        (etcd_errors.DeadlineExceeded("slow"), errors.Unavailable, True),
        (etcd_errors.Compacted(7), errors.Expired, None),
        (etcd_errors.ResourceExhausted("too big"), errors.RequestRejected, None),
        (etcd_errors.PermissionDenied("no"), errors.InternalStorageError, None),
    ],
)
async def test_translate(err: etcd_errors.EtcdError, kind: type, is_timeout: bool | None) -> None:
    out = translate(err, "/k")
    assert type(out) is kind
    if isinstance(out, errors.Unavailable):
        assert out.timeout is is_timeout
    if isinstance(out, errors.Expired):
        assert out.message == LIST_TOO_OLD

    async def failing() -> None:
        raise err

    with pytest.raises(kind):
        await call(failing(), 1.0, operation="get")


async def test_call_is_bounded() -> None:
    never = asyncio.Event()
    with pytest.raises(errors.Unavailable) as err:
        await call(never.wait(), 0.05, operation="get")
    assert err.value.timeout


async def test_call_raw_errors_pass_through() -> None:
    async def compacted() -> None:
        raise etcd_errors.Compacted(3)

    with pytest.raises(etcd_errors.Compacted):
        await call(compacted(), 1.0, operation="list", raw=(etcd_errors.Compacted,))


@pytest.mark.parametrize(
    ("rv", "value"), [("", 0), ("0", 0), ("007", 7), ("18446744073709551615", 2**64 - 1)]
)
def test_parse_resource_version(rv: str, value: int) -> None:
    assert parse_resource_version(rv) == value


@pytest.mark.parametrize(
    ("rv", "reason"),
    [("abc", "invalid syntax"), ("-1", "invalid syntax"), ("1.5", "invalid syntax"),
     ("18446744073709551616", "value out of range")],
)  # fmt: skip
def test_parse_resource_version_errors(rv: str, reason: str) -> None:
    with pytest.raises(errors.InvalidResourceVersion) as err:
        parse_resource_version(rv)
    assert err.value.message == (
        f'invalid resource version: resourceVersion: Invalid value: "{rv}": '
        f'strconv.ParseUint: parsing "{rv}": {reason}'
    )


def test_preconditions() -> None:
    obj = {"metadata": {"uid": "A", "resourceVersion": "5"}}
    Preconditions(uid="A", resource_version="5").check("k", obj)
    with pytest.raises(
        errors.PreconditionFailed, match="UID in precondition: B, UID in object meta: A"
    ):
        Preconditions(uid="B").check("k", obj)
    with pytest.raises(errors.PreconditionFailed, match=r"UID in object meta: $"):
        Preconditions(uid="B").check("k", {})


# ----------------------------------------------------------------------------- watch transform


def _kv(name: str, node: str, create: int, mod: int) -> KeyValue:
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"nodeName": node},
    }
    return KeyValue(f"/r/pods/ns/{name}".encode(), codec.encode(obj), create, mod, 1)


def _watcher(field: str = "") -> Etcd3Watcher:
    pred = SelectionPredicate(
        field=parse_field_selector(field) if field else None, get_attrs=attrs_func("pods")
    )
    return Etcd3Watcher(cast(EtcdClient, None), 1.0, "/r/pods/", 1, ListOptions(predicate=pred))


def _view(w: Etcd3Watcher, event: Event) -> tuple[str, str, int] | None:
    out = w._transform(event)
    if out is None:
        return None
    obj: dict[str, Any] = orjson.loads(out.data)
    assert obj["metadata"]["resourceVersion"] == str(out.resource_version)
    return out.type, obj["spec"]["nodeName"], out.resource_version


def test_transform_without_selector() -> None:
    w = _watcher()
    put = EventType.PUT
    assert _view(w, Event(put, _kv("a", "n1", 5, 5))) == ("ADDED", "n1", 5)
    assert _view(w, Event(put, _kv("a", "n2", 5, 6), _kv("a", "n1", 5, 5))) == ("MODIFIED", "n2", 6)
    gone = Event(EventType.DELETE, KeyValue(b"/r/pods/ns/a", b"", 0, 7, 0), _kv("a", "n2", 5, 6))
    assert _view(w, gone) == ("DELETED", "n2", 7)


def test_transform_with_selector_transitions() -> None:
    w = _watcher("spec.nodeName=n1")
    put = EventType.PUT
    assert _view(w, Event(put, _kv("a", "n2", 5, 5))) is None
    assert _view(w, Event(put, _kv("a", "n1", 5, 6), _kv("a", "n2", 5, 5))) == ("ADDED", "n1", 6)
    assert _view(w, Event(put, _kv("a", "n1", 5, 7), _kv("a", "n1", 5, 6))) == ("MODIFIED", "n1", 7)
    assert _view(w, Event(put, _kv("a", "n3", 5, 8), _kv("a", "n1", 5, 7))) == ("DELETED", "n1", 8)
    assert _view(w, Event(put, _kv("a", "n4", 5, 9), _kv("a", "n3", 5, 8))) is None
    deleted = KeyValue(b"/r/pods/ns/a", b"", 0, 10, 0)
    assert _view(w, Event(EventType.DELETE, deleted, _kv("a", "n4", 5, 9))) is None
    # No previous value for a modification: treated as entering.
    assert _view(w, Event(put, _kv("b", "n1", 3, 11))) == ("ADDED", "n1", 11)


def test_transform_delete_without_prev_kv_is_an_error() -> None:
    w = _watcher()
    with pytest.raises(errors.StorageError, match="PrevKv=nil"):
        w._transform(Event(EventType.DELETE, KeyValue(b"/r/pods/ns/a", b"", 0, 7, 0)))


def test_expired_event_status() -> None:
    event = expired_event("too old resource version: 5 (9)")
    assert event.type == "ERROR"
    assert orjson.loads(event.data)["code"] == 410
