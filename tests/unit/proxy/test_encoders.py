"""LIST bodies produced in bounded steps are, joined, exactly the whole list encoded at
once: JSON (stored bytes), Table, PartialObjectMetadataList, YAML (of each), protobuf."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import orjson
import pytest
import yaml

from lab import seed
from proxy.endpoints import protobuf
from proxy.endpoints.encoders import (
    CHUNK_BYTES,
    EncodedAhead,
    ListEncoder,
    ProtobufListEncoder,
    dump_yaml,
    encode_items,
    joined_chunks,
    json_list,
    list_chunks,
    partial_object_metadata_list,
    partial_object_metadata_protobuf_list,
    protobuf_chunks,
    protobuf_list,
    table_list,
    yaml_list,
)
from proxy.printers.table import (
    TableConvertor,
    as_partial_object_metadata_list,
    list_meta_of,
    to_table,
)
from storage import codec
from storage.interfaces import StoredObject
from tests.unit.proxy.printers.support import NOW, PODS, ago

META = {"resourceVersion": "812", "continue": "tok", "remainingItemCount": 4}


def pods(count: int) -> list[dict[str, Any]]:
    """Pods with the awkward values a YAML emitter meets: unicode, quotes, long and
    multi-line strings, numbers as strings, empty maps and lists, nulls."""
    out = []
    for i in range(count):
        out.append({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"p-{i}", "namespace": "default", "resourceVersion": str(100 + i),
                "creationTimestamp": ago(minutes=i), "labels": {"app": "web", "n": str(i)},
                "annotations": {"note": "ünïcode ✓ 'quoted' \"double\"\nsecond line",
                                "long": "word " * (40 + i), "yes": "no", "": "empty key"},
            },
            "spec": {"containers": [{"name": "c", "image": "img:1", "args": ["-v", "1e3", "~"]}],
                     "nodeName": f"node-{i % 3}", "tolerations": [], "nodeSelector": {}},
            "status": {"phase": "Running" if i % 2 else "Succeeded", "podIP": None,
                       "containerStatuses": [{"name": "c", "ready": True, "restartCount": i,
                                              "state": {"running": {}}}]},
        })  # fmt: skip
    return out


def stored(objects: list[dict[str, Any]]) -> list[StoredObject]:
    return [StoredObject(f"/registry/pods/{i}", orjson.dumps(o), i + 1)
            for i, o in enumerate(objects)]  # fmt: skip


def ticking(step: float = 1.0) -> Callable[[], float]:
    """A clock that moves ``step`` each time it is read."""
    counter = itertools.count()
    return lambda: next(counter) * step


CHUNKINGS = [
    {},  # the defaults: one step holds everything here
    {"chunk_bytes": 1},  # a chunk after every item
    {"chunk_bytes": 3000},
    {"step_seconds": 2.5, "clock": ticking()},  # a step after every item or two
]


def joined(encoder: ListEncoder, items: list[StoredObject], **chunking: Any) -> bytes:
    return b"".join(list_chunks(encoder, items, **chunking))


@pytest.mark.parametrize("count", [0, 1, 7])
@pytest.mark.parametrize("chunking", CHUNKINGS)
def test_json_list_is_the_stored_bytes_joined(count: int, chunking: dict[str, Any]) -> None:
    objects = pods(count)
    whole = {"kind": "PodList", "apiVersion": "v1", "metadata": META, "items": objects}
    encoder = json_list("PodList", "v1", META)
    assert joined(encoder, stored(objects), **chunking) == orjson.dumps(whole)


@pytest.mark.parametrize("count", [0, 1, 7])
@pytest.mark.parametrize("chunking", CHUNKINGS)
@pytest.mark.parametrize("include", ["None", "Metadata", "Object"])
def test_table_rows_streamed_equal_the_whole_table(
    count: int, chunking: dict[str, Any], include: str
) -> None:
    objects = pods(count)
    whole = to_table(PODS, objects, include_object=include, list_meta=META, now=NOW,
                     table_version="v1beta1")  # fmt: skip
    convertor = TableConvertor(PODS, include_object=include, table_version="v1beta1", now=NOW)
    encoder = table_list(convertor, list_meta_of(META))
    assert joined(encoder, stored(objects), **chunking) == orjson.dumps(whole)


@pytest.mark.parametrize("pages", [[0], [1], [3, 4], [2, 0, 5]])
@pytest.mark.parametrize("chunking", CHUNKINGS)
async def test_table_rows_printed_ahead_equal_the_whole_table(
    pages: list[int], chunking: dict[str, Any]
) -> None:
    """Rows printed page by page as storage reads them (``EncodedAhead``), then joined:
    the Table printed whole, byte for byte."""
    objects = pods(sum(pages))
    items = stored(objects)
    whole = to_table(PODS, objects, list_meta=META, now=NOW)
    convertor = TableConvertor(PODS, now=NOW)
    ahead = EncodedAhead(convertor.row_json, step_seconds=0.0)  # a yield after every row
    start = 0
    for size in pages:
        await ahead.take(items[start : start + size])
        start += size
    pieces = ahead.pieces_for(items)
    assert pieces is not None
    encoder = table_list(convertor, list_meta_of(META))
    assert b"".join(joined_chunks(encoder, pieces, **chunking)) == orjson.dumps(whole)


async def test_rows_printed_ahead_serve_only_the_list_they_were_printed_for() -> None:
    """The pieces are used only for exactly the versions taken, in order: a list served
    from elsewhere (the cache), or changed after storage, is printed when written; a
    restart (the list read again) drops them; an item that fails to print stops it."""
    items = stored(pods(4))
    ahead = EncodedAhead(TableConvertor(PODS, now=NOW).row_json)
    assert ahead.pieces_for([]) == []
    await ahead.take(items[:2])
    assert ahead.pieces_for(items) is None and ahead.pieces_for(items[:2]) is not None
    await ahead.take(items[2:])
    copies = [StoredObject(i.key, i.data, i.resource_version) for i in items]
    assert ahead.pieces_for(copies) is None and ahead.pieces_for(items[::-1]) is None
    ahead.restart()
    assert ahead.pieces_for(items) is None and ahead.pieces_for([]) == []

    def fails(item: StoredObject) -> bytes:
        if item is items[1]:
            raise ValueError("cannot print")
        return b"{}"

    failing = EncodedAhead(fails)
    await failing.take(items[:2])  # the error surfaces where the list is written
    await failing.take(items[2:])
    assert failing.pieces_for(items) is None


@pytest.mark.parametrize("count", [0, 1, 7])
@pytest.mark.parametrize("chunking", CHUNKINGS)
def test_partial_object_metadata_list_streamed_equals_whole(
    count: int, chunking: dict[str, Any]
) -> None:
    objects = pods(count)
    whole = as_partial_object_metadata_list(objects, META, "v1")
    encoder = partial_object_metadata_list(META, "v1")
    assert joined(encoder, stored(objects), **chunking) == orjson.dumps(whole)


@pytest.mark.parametrize("count", [0, 1, 7])
@pytest.mark.parametrize("chunking", CHUNKINGS)
def test_yaml_list_streamed_per_item_equals_one_dump(count: int, chunking: dict[str, Any]) -> None:
    objects = pods(count)
    whole = {"kind": "PodList", "apiVersion": "v1", "metadata": META, "items": objects}
    body = joined(yaml_list("PodList", "v1", META), stored(objects), **chunking)
    assert body == dump_yaml(whole)
    assert yaml.safe_load(body) == whole


def test_yaml_streamed_equals_the_pure_python_emitter_for_stored_objects() -> None:
    """What kube clients meet: the same text as PyYAML's own emitter (the C one differs
    only in how it wraps long escaped strings, which stored objects here do not have)."""
    objects = [{k: v for k, v in o.items() if k != "metadata"} for o in pods(5)]
    whole = {"kind": "PodList", "apiVersion": "v1", "metadata": META, "items": objects}
    body = joined(yaml_list("PodList", "v1", META), stored(objects), chunk_bytes=1)
    assert body.decode() == yaml.safe_dump(whole, sort_keys=False)


def test_each_step_is_bounded() -> None:
    """A step ends after the item that crosses the time budget: with a clock moving 1 s
    per reading and a 1.5 s budget, no chunk holds more than two items."""
    items = stored(pods(9))
    chunks = list(list_chunks(json_list("PodList", "v1", META), items, step_seconds=1.5,
                              clock=ticking()))  # fmt: skip
    assert len(chunks) >= 5
    for chunk in chunks:
        assert chunk.count(b'"kind":"Pod"') <= 2
    by_size = list(list_chunks(json_list("PodList", "v1", META), items, chunk_bytes=1))
    assert len(by_size) == len(items) + 1  # one per item, then the tail


@pytest.mark.parametrize("count", [0, 1, 7])
@pytest.mark.parametrize("chunking", CHUNKINGS)
@pytest.mark.parametrize("include", ["None", "Metadata", "Object"])
def test_yaml_table_streamed_equals_one_dump(
    count: int, chunking: dict[str, Any], include: str
) -> None:
    objects = pods(count)
    whole = to_table(PODS, objects, include_object=include, list_meta=META, now=NOW)
    convertor = TableConvertor(PODS, include_object=include, table_version="v1", now=NOW)
    encoder = table_list(convertor, list_meta_of(META), yaml_media=True)
    body = joined(encoder, stored(objects), **chunking)
    assert body == dump_yaml(whole)
    assert yaml.safe_load(body) == whole


@pytest.mark.parametrize("count", [0, 1, 7])
@pytest.mark.parametrize("chunking", CHUNKINGS)
def test_yaml_partial_object_metadata_list_streamed_equals_one_dump(
    count: int, chunking: dict[str, Any]
) -> None:
    objects = pods(count)
    whole = as_partial_object_metadata_list(objects, META, "v1")
    body = joined(partial_object_metadata_list(META, "v1", yaml_media=True), stored(objects),
                  **chunking)  # fmt: skip
    assert body == dump_yaml(whole)
    assert yaml.safe_load(body) == whole


def stored_pods(count: int) -> list[StoredObject]:
    """Pods as the cache holds them (the protobuf schema has every member)."""
    return [
        codec.decode(f"/registry/pods/ns/p-{i}", codec.encode(seed.pod(i, 2, 2)), 10 + i)
        for i in range(count)
    ]


def protobuf_body(encoder: ProtobufListEncoder, items: list[StoredObject], **kw: Any) -> bytes:
    encoded: list[bytes] = []
    for _ in encode_items(encoder.item, items, encoded):
        pass
    assert len(encoded) == len(items) and all(encoded)
    return b"".join(protobuf_chunks(encoder, encoded, **kw))


@pytest.mark.parametrize("count", [0, 1, 7])
@pytest.mark.parametrize("chunk_bytes", [1, 3000, CHUNK_BYTES])
def test_protobuf_list_is_the_whole_list_encoded(count: int, chunk_bytes: int) -> None:
    items = stored_pods(count)
    whole = {"apiVersion": "v1", "kind": "PodList", "metadata": META,
             "items": [i.copy() for i in items]}  # fmt: skip
    body = protobuf_body(protobuf_list("PodList", "v1", META), items, chunk_bytes=chunk_bytes)
    assert body == protobuf.encode_object(whole)
    # serialize once: the items' bytes are the ones kept on each version
    assert all(protobuf.stored_item(i) is protobuf.stored_item(i) for i in items)


@pytest.mark.parametrize("count", [0, 1, 7])
def test_protobuf_partial_object_metadata_list_is_the_whole_list_encoded(count: int) -> None:
    items = stored_pods(count)
    whole = as_partial_object_metadata_list([i.copy() for i in items], META, "v1")
    body = protobuf_body(partial_object_metadata_protobuf_list(META, "v1"), items)
    assert body == protobuf.encode_object(whole)


def test_an_item_protobuf_cannot_carry_sends_the_list_as_json() -> None:
    items = stored_pods(3)
    odd = {**items[1].copy(), "notInTheSchema": True}
    del odd["metadata"]["resourceVersion"]  # as stored in etcd
    items[1] = codec.decode("/registry/pods/ns/odd", orjson.dumps(odd), 99)
    encoder = protobuf_list("PodList", "v1", META)
    encoded: list[bytes] = []
    list(encode_items(encoder.item, items, encoded))
    assert len(encoded) == 2 and encoded[-1] == b""  # stopped at the odd one
    whole = {"kind": "PodList", "apiVersion": "v1", "metadata": META,
             "items": [i.copy() for i in items]}  # fmt: skip
    assert joined(encoder.fallback, items) == orjson.dumps(whole)


def test_items_are_encoded_in_bounded_steps() -> None:
    """With a clock moving 1 s per reading and a 1.5 s budget, a step ends after every
    item or two."""
    encoded: list[bytes] = []
    steps = list(encode_items(lambda n: b"x" * n, range(1, 10), encoded, step_seconds=1.5,
                              clock=ticking()))  # fmt: skip
    assert encoded == [b"x" * n for n in range(1, 10)]
    assert len(steps) >= 4
