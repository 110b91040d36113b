"""LIST bodies produced in bounded steps are, joined, exactly the whole list encoded at
once: JSON (stored bytes), Table, PartialObjectMetadataList, YAML."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import orjson
import pytest
import yaml

from proxy.endpoints.encoders import (
    ListEncoder,
    dump_yaml,
    json_list,
    list_chunks,
    partial_object_metadata_list,
    table_list,
    yaml_list,
)
from proxy.printers.table import (
    TableConvertor,
    as_partial_object_metadata_list,
    list_meta_of,
    to_table,
)
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


def stored(objects: list[dict[str, Any]]) -> list[bytes]:
    return [orjson.dumps(o) for o in objects]


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


def joined(encoder: ListEncoder, items: list[bytes], **chunking: Any) -> bytes:
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
