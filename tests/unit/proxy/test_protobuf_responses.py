"""Serialize once: a version's protobuf bytes are made at most once, whichever path
(LIST from the cache, GET, watch events) asks for them."""

from __future__ import annotations

from typing import Any

import pytest

from lab import seed
from proxy.endpoints import protobuf as front
from storage import codec


def test_each_version_is_encoded_at_most_once(monkeypatch: pytest.MonkeyPatch) -> None:
    stored = codec.decode("/registry/pods/a/b", codec.encode(seed.pod(1, 1, 1)), 7)
    calls: list[int] = []
    encode_object = front.encode_object

    def counted(obj: dict[str, Any]) -> bytes | None:
        calls.append(1)
        return encode_object(obj)

    monkeypatch.setattr(front, "encode_object", counted)
    entry = front.stored_item(stored)  # the LIST path
    assert front.stored_item(stored) is entry and len(calls) == 1
    whole = front.stored_bytes(stored)  # GET, watch: head + the same entry + trailer
    assert front.stored_bytes(stored) == whole and len(calls) == 1
    assert whole == encode_object(stored.copy())
    assert front.item_of(whole) == entry
    assert front.object_bytes(stored.data) == whole
    assert front.object_bytes(stored.data) is front.object_bytes(stored.data)


def test_versions_of_a_kind_share_their_envelope_head() -> None:
    a, b = (codec.decode("/registry/pods/a/b", codec.encode(seed.pod(i, 1, 1)), 7 + i)
            for i in range(2))  # fmt: skip
    assert front.stored_item(a) and front.stored_item(b)
    assert a.remembered(front.MEDIA_TYPE + ";head") is b.remembered(front.MEDIA_TYPE + ";head")


def test_a_value_with_its_own_content_type_is_answered_in_upstreams_layout() -> None:
    pod = codec.decode_object("/k", codec.encode(seed.pod(3, 1, 1)))
    standard = front.encode_object(pod)
    assert standard is not None and standard.endswith(b"\x1a\x00\x22\x00")
    own = standard[:-4] + b"\x22" + bytes((len(front.MEDIA_TYPE),)) + front.MEDIA_TYPE.encode()
    stored = codec.decode("/registry/pods/a/b", own, 11)
    assert front.stored_bytes(stored) == front.encode_object(stored.copy())


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
