"""The YAML of large lists, written off the event loop by a child process.

:mod:`proxy.endpoints.yaml_encoding` says why and speaks the child's protocol. Here:
:class:`YAMLWorker` starts the child when first needed (``python -m
proxy.endpoints.yaml_encoding``, one per event loop, one batch at a time: it uses at
most one core beside the server's), and :func:`list_chunks` streams a YAML list with
it: the loop takes each item's JSON (the stored bytes, or the kept Table row or
metadata), sends batches of ~``BATCH_BYTES`` and writes the YAML the child returns,
the next batch encoding while the last is written. The body is byte for byte the one
:func:`proxy.endpoints.encoders.list_chunks` writes on the loop; when the child cannot
answer (it could not start, died, or failed on an item) the rest of the list is
encoded on the loop in bounded steps, as before, and that is logged once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import AsyncIterator, Iterator, Sequence

from proxy.endpoints.encoders import ListEncoder
from proxy.endpoints.encoders import list_chunks as chunks_on_loop
from proxy.endpoints.yaml_encoding import ANSWER, frame
from storage.interfaces import StoredObject

__all__ = ["BATCH_BYTES", "MIN_ITEMS", "YAMLWorker", "close", "list_chunks", "worker"]

log = logging.getLogger("watchcache.yaml")

MIN_ITEMS = 32  # fewer items (< ~30 ms on the loop, in steps) are not worth a round trip
BATCH_BYTES = 256 * 1024  # JSON per request: ~40 pods, ~40 ms of the child's CPU
CHILD = (sys.executable, "-m", "proxy.endpoints.yaml_encoding")


class YAMLWorker:
    """One child process that encodes batches of JSON documents as YAML items."""

    def __init__(self, argv: Sequence[str] = CHILD) -> None:
        self._argv = tuple(argv)
        self._process: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()
        self._warned = False

    async def encode(self, documents: Sequence[bytes]) -> bytes | None:
        """``yaml_encoding.dump_items(documents)`` from the child; None when it cannot
        answer. A caller cancelled meanwhile does not cut the exchange short (the
        child's answer would be left in the pipe): it finishes beside it."""
        return await asyncio.shield(asyncio.ensure_future(self._exchange(documents)))

    async def _exchange(self, documents: Sequence[bytes]) -> bytes | None:
        async with self._lock:
            try:
                process = await self._started()
                assert process.stdin is not None and process.stdout is not None
                process.stdin.write(frame(documents))
                await process.stdin.drain()
                status, length = ANSWER.unpack(await process.stdout.readexactly(ANSWER.size))
                payload = await process.stdout.readexactly(length)
            except (OSError, EOFError, ValueError) as e:  # IncompleteReadError is an EOFError
                self._warn(f"the YAML encoder process failed ({type(e).__name__}: {e})")
                await self.close()
                return None
            if status:
                self._warn(f"the YAML encoder process refused a batch: {payload[:200]!r}")
                return None
            return payload

    async def _started(self) -> asyncio.subprocess.Process:
        process = self._process
        if process is None or process.returncode is not None:
            process = self._process = await asyncio.create_subprocess_exec(
                *self._argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
            )
        return process

    def _warn(self, message: str) -> None:
        if not self._warned:  # once: the loop encodes meanwhile, and the next list retries
            self._warned = True
            log.warning("%s; encoding YAML lists on the event loop", message)

    async def close(self) -> None:
        """End the child: its stdin closes, and it is killed if it does not exit."""
        process, self._process = self._process, None
        if process is None or process.returncode is not None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            async with asyncio.timeout(2):
                await process.wait()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()


_workers: dict[asyncio.AbstractEventLoop, YAMLWorker] = {}


def worker() -> YAMLWorker:
    """The running loop's worker (its child starts with the first batch)."""
    loop = asyncio.get_running_loop()
    for other in [other for other in _workers if other.is_closed()]:
        del _workers[other]
    found = _workers.get(loop)
    if found is None:
        found = _workers[loop] = YAMLWorker()
    return found


async def close() -> None:
    """Stop the running loop's worker, if it has one (the server's cleanup)."""
    found = _workers.pop(asyncio.get_running_loop(), None)
    if found is not None:
        await found.close()


def _batches(
    encoder: ListEncoder, items: Sequence[StoredObject]
) -> Iterator[tuple[Sequence[StoredObject], list[bytes]]]:
    assert encoder.json_item is not None
    start, size = 0, 0
    documents: list[bytes] = []
    for index, stored in enumerate(items):
        document = encoder.json_item(stored)
        documents.append(document)
        size += len(document)
        if size >= BATCH_BYTES:
            yield items[start : index + 1], documents
            start, documents, size = index + 1, [], 0
    if documents:
        yield items[start:], documents


async def list_chunks(
    encoder: ListEncoder, items: Sequence[StoredObject], yaml_worker: YAMLWorker | None = None
) -> AsyncIterator[bytes]:
    """The YAML list ``encoder`` (one with ``json_item``) of ``items``, its items
    encoded by ``yaml_worker`` (the loop's by default): the body ``encoders.list_chunks``
    writes, in one piece per batch. Each batch's JSON is taken on the loop (a bounded
    step: ~``BATCH_BYTES``), the next batch is sent before the last is written."""
    if not items:
        for chunk in chunks_on_loop(encoder, items):
            yield chunk
        return
    child = yaml_worker or worker()
    pieces = ListEncoder(b"", encoder.item, b"", b"")  # the items alone, on the loop
    yield encoder.head
    failed = False
    pending: _Sent | None = None
    for batch, documents in _batches(encoder, items):
        sent = (None if failed else asyncio.ensure_future(child.encode(documents)), batch)
        if pending is not None:
            async for chunk in _answer(pending, pieces):
                yield chunk
            failed = failed or _failed(pending)
        pending = sent
        await asyncio.sleep(0)  # a batch's JSON was a step
    if pending is not None:
        async for chunk in _answer(pending, pieces):
            yield chunk
    if encoder.tail:
        yield encoder.tail


_Sent = tuple["asyncio.Future[bytes | None] | None", Sequence[StoredObject]]


def _failed(sent: _Sent) -> bool:
    """Whether the child did not answer a batch (the rest of the list stays here)."""
    return sent[0] is None or sent[0].result() is None


async def _answer(sent: _Sent, pieces: ListEncoder) -> AsyncIterator[bytes]:
    """The child's YAML of a batch, or the batch encoded on the loop in bounded steps."""
    answer, batch = sent
    encoded = await answer if answer is not None else None
    if encoded is not None:
        yield encoded
        return
    for chunk in chunks_on_loop(pieces, batch):
        yield chunk
        await asyncio.sleep(0)
