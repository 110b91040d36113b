"""Serialize once: a version's protobuf bytes are made at most once, whichever path
(LIST from the cache, GET, watch events) asks for them."""

from __future__ import annotations

from lab import seed
from proxy.endpoints import protobuf as front
from storage import codec
from storage.interfaces import StoredObject


def test_each_version_is_encoded_at_most_once() -> None:
    stored = codec.decode("/registry/pods/a/b", codec.encode(seed.pod(1, 1, 1)), 7)
    calls: list[int] = []

    def encode(st: StoredObject) -> bytes:
        calls.append(1)
        return front.encode_object(st.copy()) or b""

    first = stored.encoded(front.MEDIA_TYPE, encode)
    assert stored.encoded(front.MEDIA_TYPE, encode) is first and len(calls) == 1
    assert front.stored_bytes(stored) is first  # the LIST path finds the same bytes
    assert front.object_bytes(stored.data) == first
    assert front.object_bytes(stored.data) is front.object_bytes(stored.data)  # GET, watch


def test_a_version_read_from_protobuf_is_answered_from_its_value() -> None:
    pod = codec.decode_object("/k", codec.encode(seed.pod(2, 1, 1)))  # canonical key order
    value = front.encode_object(pod)
    assert value is not None
    stored = codec.decode("/registry/pods/a/b", value, 11)
    from_json = front.encode_object(stored.copy())
    assert front.stored_bytes(stored) == from_json  # spliced, not re-encoded, same bytes


def test_a_list_joins_its_items_bytes() -> None:
    serializer = front.serializer()
    assert serializer is not None
    items = [codec.decode_object("/k", codec.encode(seed.pod(i, 2, 2))) for i in range(3)]
    for i, item in enumerate(items):
        item["metadata"]["resourceVersion"] = str(10 + i)
    encoded = [front.encode_object(item) or b"" for item in items]
    meta = {"resourceVersion": "12", "continue": "abc"}
    joined = b"".join(front.list_parts("v1", "PodList", meta, encoded, serializer))
    whole = {"apiVersion": "v1", "kind": "PodList", "metadata": meta, "items": items}
    assert joined == front.encode_object(whole)
