"""WatchStream's routing, without etcd: responses are fed to the reader's dispatch and
the requests it queues are inspected."""

from __future__ import annotations

import pytest

from etcdclient._endpoints import EndpointPool, TLSFiles
from etcdclient._pb import kv_pb2, rpc_pb2
from etcdclient.errors import ClientClosed, Compacted, WatchCanceled
from etcdclient.types import EventType
from etcdclient.watch import Watch, WatchStream, progress_is_trustworthy


def make_stream() -> WatchStream:
    pool = EndpointPool(["http://127.0.0.1:1"], TLSFiles())
    s = WatchStream(pool, request_timeout=1.0, dial_timeout=1.0)
    s._connected = True  # as if a stream were open; no task runs
    return s


def add(s: WatchStream, start: int = 0, buffer_size: int = 8) -> Watch:
    w = Watch(s, b"/k", b"/l", start_revision=start, prev_kv=False, progress_notify=False,
              filters=(), buffer_size=buffer_size)  # fmt: skip
    s._watches[w] = None
    s._create(w)
    return w


def sent(s: WatchStream) -> list[rpc_pb2.WatchRequest]:
    out = []
    while s._outbox:
        req = s._request(*s._outbox.popleft())
        if req is not None:
            out.append(req)
    return out


def kv(rev: int, key: bytes = b"/k1", value: bytes = b"v") -> kv_pb2.KeyValue:
    return kv_pb2.KeyValue(key=key, value=value, create_revision=rev, mod_revision=rev, version=1)


def resp(
    wid: int,
    header: int,
    *revs: int,
    created: bool = False,
    canceled: bool = False,
    compact_revision: int = 0,
    cancel_reason: str = "",
    fragment: bool = False,
) -> rpc_pb2.WatchResponse:
    """A WatchResponse for watch ``wid`` at ``header`` with a PUT event at each of ``revs``."""
    return rpc_pb2.WatchResponse(
        header=rpc_pb2.ResponseHeader(revision=header),
        watch_id=wid,
        events=[kv_pb2.Event(type=kv_pb2.Event.PUT, kv=kv(r)) for r in revs],
        created=created,
        canceled=canceled,
        compact_revision=compact_revision,
        cancel_reason=cancel_reason,
        fragment=fragment,
    )


async def test_created_now_then_events_and_progress() -> None:
    s = make_stream()
    w = add(s)
    [create] = sent(s)
    assert create.create_request.watch_id == w.watch_id and create.create_request.fragment
    s._dispatch(resp(w.watch_id, 10, created=True))
    assert w.next_revision == 11
    s._dispatch(resp(w.watch_id, 13, 12, 13))
    batch = await anext(w)
    assert batch.revision == 13 and [e.kv.mod_revision for e in batch.events] == [12, 13]
    assert batch.events[0].type is EventType.PUT and not batch.progress_notify
    assert w.next_revision == 14
    s._dispatch(resp(w.watch_id, 20))  # progress notification
    progress = await anext(w)
    assert progress.progress_notify and progress.revision == 20 and progress.events == ()
    assert w.next_revision == 21
    s._dispatch(resp(w.watch_id, 15))  # stale progress: never goes backwards
    assert not w._buffer


async def test_fragments_are_reassembled() -> None:
    s = make_stream()
    w = add(s, start=5)
    s._dispatch(resp(w.watch_id, 9, 5, 6, fragment=True))
    s._dispatch(resp(w.watch_id, 9, 7, fragment=True))
    assert not w._buffer
    s._dispatch(resp(w.watch_id, 9, 8))
    batch = await anext(w)
    assert [e.kv.mod_revision for e in batch.events] == [5, 6, 7, 8]
    assert w.next_revision == 9


async def test_compacted_after_buffered_batches() -> None:
    s = make_stream()
    w = add(s, start=3)
    s._dispatch(resp(w.watch_id, 9, created=True))
    s._dispatch(resp(w.watch_id, 9, 3))
    s._dispatch(resp(w.watch_id, 9, canceled=True, compact_revision=7))
    assert (await anext(w)).revision == 3
    with pytest.raises(Compacted) as e:
        await anext(w)
    assert e.value.compact_revision == 7
    assert w.watch_id == 0 and w not in s._watches


async def test_failed_creation_with_id_minus_one_goes_to_the_oldest_pending() -> None:
    s = make_stream()
    a, b = add(s), add(s)
    sent(s)
    s._dispatch(resp(-1, 5, created=True, canceled=True, cancel_reason="bad range"))
    s._dispatch(resp(b.watch_id, 5, created=True))
    with pytest.raises(WatchCanceled, match="bad range"):
        await anext(a)
    assert b.next_revision == 6 and b.watch_id in s._by_id


async def test_full_buffer_makes_the_watch_lag_then_resume_from_last_delivered() -> None:
    s = make_stream()
    w = add(s, start=2, buffer_size=1)
    sent(s)
    old_id = w.watch_id
    s._dispatch(resp(old_id, 3, 2))
    s._dispatch(resp(old_id, 4, 3))  # no room: lag, cancel at etcd
    assert w.lagging and old_id not in s._by_id
    [cancel] = sent(s)
    assert cancel.cancel_request.watch_id == old_id
    s._dispatch(resp(old_id, 5, 4))  # late response for the cancelled id: dropped
    assert (await anext(w)).revision == 2  # drained: re-created from 3
    assert not w.lagging
    [create] = sent(s)
    assert create.create_request.start_revision == 3
    assert create.create_request.watch_id == w.watch_id != old_id


async def test_broadcast_progress_only_to_caught_up_watches_on_old_etcd() -> None:
    s = make_stream()
    now, behind = add(s), add(s, start=2)
    sent(s)
    s._dispatch(resp(now.watch_id, 10, created=True))
    s._dispatch(resp(behind.watch_id, 10, created=True))
    s._dispatch(resp(-1, 12))
    assert (await anext(now)).revision == 12
    assert not behind._buffer
    s.trust_broadcast = True
    s._dispatch(resp(-1, 13))
    assert (await anext(behind)).revision == 13 and behind.next_revision == 14


async def test_cancel_stops_iteration_and_close_raises() -> None:
    s = make_stream()
    w, other = add(s), add(s)
    sent(s)
    s._dispatch(resp(w.watch_id, 3, 3))
    wid = w.watch_id
    await w.cancel()
    assert [r.cancel_request.watch_id for r in sent(s)] == [wid]
    with pytest.raises(StopAsyncIteration):
        await anext(w)
    await s.close()
    with pytest.raises(ClientClosed):
        await anext(other)


def test_unknown_filter_is_rejected() -> None:
    s = make_stream()
    with pytest.raises(ValueError, match="filter"):
        Watch(s, b"/k", None, start_revision=0, prev_kv=False, progress_notify=False,
              filters=["NOPATCH"], buffer_size=1)  # fmt: skip


@pytest.mark.parametrize(
    ("version", "trusted"),
    [("3.4.23", False), ("3.4.31", True), ("3.5.1", False), ("3.5.12", False),
     ("3.5.13", True), ("3.5.16", True), ("3.6.0", True), ("garbage", False)],
)  # fmt: skip
def test_progress_trust_by_version(version: str, trusted: bool) -> None:
    assert progress_is_trustworthy(version) is trusted
