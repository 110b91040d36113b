"""A large YAML list written by the child process is, byte for byte, the list the loop
writes itself (the resource's List, a Table, a PartialObjectMetadataList); the loop
encodes no item meanwhile; a child that cannot start or dies mid-list leaves the body
whole (the rest is encoded on the loop)."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import AsyncIterator, Iterator

import pytest
import yaml

from proxy.endpoints import yaml_worker
from proxy.endpoints.encoders import (
    ListEncoder,
    list_chunks,
    partial_object_metadata_list,
    table_list,
    yaml_list,
)
from proxy.endpoints.yaml_worker import YAMLWorker
from proxy.printers.table import TableConvertor, list_meta_of
from storage.interfaces import StoredObject
from tests.unit.proxy.printers.support import NOW, PODS
from tests.unit.proxy.test_encoders import META, pods, stored

COUNT = 400  # ~600 kB of JSON: a few batches of BATCH_BYTES


def encoders() -> Iterator[ListEncoder]:
    yield yaml_list("PodList", "v1", META)
    for include in ("None", "Metadata", "Object"):
        convertor = TableConvertor(PODS, include_object=include, table_version="v1", now=NOW)
        yield table_list(convertor, list_meta_of(META), yaml_media=True)
    yield partial_object_metadata_list(META, "v1", yaml_media=True)


async def joined(chunks: AsyncIterator[bytes]) -> bytes:
    return b"".join([chunk async for chunk in chunks])


def not_on_the_loop(encoder: ListEncoder) -> ListEncoder:
    def refuse(stored: StoredObject) -> bytes:
        raise AssertionError("an item was encoded on the loop")

    return dataclasses.replace(encoder, item=refuse)


@pytest.fixture
async def child() -> AsyncIterator[YAMLWorker]:
    worker = YAMLWorker()
    yield worker
    await worker.close()


async def test_the_child_writes_the_list_the_loop_writes(
    child: YAMLWorker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(yaml_worker, "BATCH_BYTES", 4096)  # many batches, even of rows
    items = stored(pods(COUNT))
    for encoder in encoders():
        expected = b"".join(list_chunks(encoder, items))
        assert len(expected) > 4 * yaml_worker.BATCH_BYTES
        body = await joined(yaml_worker.list_chunks(not_on_the_loop(encoder), items, child))
        assert body == expected
    assert yaml.safe_load(body)["items"][-1]["metadata"]["name"] == f"p-{COUNT - 1}"


@pytest.mark.parametrize("count", [0, 1])
async def test_short_and_empty_lists(child: YAMLWorker, count: int) -> None:
    items = stored(pods(count))
    encoder = yaml_list("PodList", "v1", META)
    expected = b"".join(list_chunks(encoder, items))
    assert await joined(yaml_worker.list_chunks(encoder, items, child)) == expected


async def test_a_child_that_cannot_start_leaves_the_list_to_the_loop() -> None:
    worker = YAMLWorker(argv=("/nonexistent/python",))
    items = stored(pods(COUNT // 4))
    encoder = yaml_list("PodList", "v1", META)
    expected = b"".join(list_chunks(encoder, items))
    assert await joined(yaml_worker.list_chunks(encoder, items, worker)) == expected


async def test_a_child_that_dies_mid_list_leaves_the_rest_to_the_loop(
    child: YAMLWorker,
) -> None:
    items = stored(pods(COUNT))
    encoder = yaml_list("PodList", "v1", META)
    expected = b"".join(list_chunks(encoder, items))
    chunks = yaml_worker.list_chunks(encoder, items, child)
    got = [await anext(chunks), await anext(chunks)]  # the head, the first batch
    assert child._process is not None
    child._process.kill()
    got += [chunk async for chunk in chunks]
    assert b"".join(got) == expected
    # the next list starts a new child
    body = await joined(yaml_worker.list_chunks(not_on_the_loop(encoder), items, child))
    assert body == expected


async def test_a_batch_the_child_refuses_is_encoded_on_the_loop(child: YAMLWorker) -> None:
    good = stored(pods(3))
    bad = StoredObject("/registry/pods/bad", b"{not json", 9)
    encoder = dataclasses.replace(
        yaml_list("PodList", "v1", META), item=lambda s: b"- refused\n" if s is bad else b""
    )
    body = await joined(yaml_worker.list_chunks(encoder, [*good, bad], child))
    assert body == encoder.head + b"- refused\n"  # the whole batch fell back


def test_the_child_imports_only_yaml_and_orjson() -> None:
    import subprocess

    probe = ("import sys, proxy.endpoints.yaml_encoding; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('proxy', 'storage', 'cacher', 'etcdclient', 'aiohttp', 'grpc')))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    assert out.strip() == "['proxy', 'proxy.endpoints', 'proxy.endpoints.yaml_encoding']"
