"""The log backend (upstream's ``plugin/pkg/audit/log`` behind ``buffered``): events
go into a bounded buffer (10,000 events) that one writer task drains in batches
(what arrived within 50 ms of the first, up to 400), serializing and writing each
batch in a worker thread, so the event loop never waits
on the disk.

One event never takes another with it (upstream encodes and writes each event on its
own): each is encoded alone; a string that is not valid UTF-8 (a header byte such as
``\xff``, kept by aiohttp as a lone surrogate) is written with U+FFFD in its place, as
Go's encoder writes invalid UTF-8; an event that still cannot be encoded is counted
in ``apiserver_audit_error_total{plugin="log"}`` and logged with its audit ID.

Overflow: when the buffer is full (the disk cannot keep up) the event is dropped,
``apiserver_audit_error_total{plugin="log"}`` counts it and a warning is logged at
most once a minute; the request itself is never delayed (upstream's ``batch`` mode
behaves so; its default ``blocking`` mode would make the request wait instead).

The file (``--audit-log-path``, ``-`` for stdout) holds one JSON Event per line, with
Go's escaping of ``<``, ``>`` and ``&``. Rotation as lumberjack (which upstream uses):
past ``--audit-log-maxsize`` megabytes the file is renamed
``<name>-<UTC time 2006-01-02T15-04-05.000><ext>`` and a new one started; backups
beyond ``--audit-log-maxbackup`` or older than ``--audit-log-maxage`` days are
deleted (0: no limit).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import datetime
import logging
import os
import sys
import time
from pathlib import Path
from typing import IO, Any

import orjson
from prometheus_client import Counter

from proxy.audit.event import CREATED_BODY, materialize
from proxy.request.utf8 import valid_utf8

__all__ = ["BUFFER_SIZE", "LogBackend", "RotatingFile", "encode_event"]

log = logging.getLogger("watchcache.audit")

BUFFER_SIZE = 10_000
BATCH_SIZE = 400
# a buffered event: its line already, or the event whose objects are still raw
Buffered = bytes | dict[str, Any]
BATCH_WAIT = 0.05  # seconds an event may wait for others to share its write
WARN_EVERY = 60.0

EVENTS = Counter(
    "apiserver_audit_event",
    "[ALPHA] Counter of audit events generated and sent to the audit backend.",
)
ERRORS = Counter(
    "apiserver_audit_error",
    "[ALPHA] Counter of audit events that failed to be audited properly. Plugin "
    "identifies the plugin affected by the error.",
    ("plugin",),
)
LEVELS = Counter(
    "apiserver_audit_level",
    "[ALPHA] Counter of policy levels for audit events (1 per request).",
    ("level",),
)
_LOG_ERRORS = ERRORS.labels("log")


def encode_event(event: dict[str, Any]) -> bytes:
    """One JSON line, escaped as Go's encoding/json escapes HTML characters (they occur
    only inside strings, so the replacement is exact). Strings that are not valid
    UTF-8 are written with U+FFFD, as Go writes them; TypeError or
    ``orjson.JSONEncodeError`` for what JSON cannot hold at all."""
    try:
        data = orjson.dumps(event)
    except orjson.JSONEncodeError:
        data = orjson.dumps(valid_utf8(event))  # the rare event: only then walked
    if b"&" in data or b"<" in data or b">" in data:
        data = data.replace(b"&", b"\\u0026").replace(b"<", b"\\u003c").replace(b">", b"\\u003e")
    return data + b"\n"


def _encode_one(event: dict[str, Any]) -> bytes:
    """One event's line, or b"" (counted and logged with its audit ID) if it cannot be
    encoded: it never takes the rest of its batch with it."""
    try:
        return encode_event(materialize(event))
    except Exception as e:  # a bug or a value no encoder takes: this event only
        _LOG_ERRORS.inc()
        log.error(
            "audit event %s (stage %s) could not be encoded and is lost: %s: %s",
            valid_utf8(event.get("auditID")),
            event.get("stage"),
            type(e).__name__,
            e,
        )
        return b""


class RotatingFile:
    """Appends lines to a file, rotating it by size (used from one thread at a time)."""

    def __init__(self, path: str, max_size_mb: int, max_backups: int, max_age_days: int) -> None:
        self.path = Path(path)
        self.max_bytes = max_size_mb * 1024 * 1024
        self.max_backups = max_backups
        self.max_age = max_age_days * 86400.0
        self._file: IO[bytes] | None = None
        self._size = 0

    def _open(self) -> IO[bytes]:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "ab")  # noqa: SIM115 (kept open across batches)
            self._size = self._file.tell()
        return self._file

    def write(self, data: bytes) -> None:
        f = self._open()
        if self.max_bytes and self._size and self._size + len(data) > self.max_bytes:
            self.rotate()
            f = self._open()
        f.write(data)
        f.flush()
        self._size += len(data)

    def rotate(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H-%M-%S.%f")[:-3]
        backup = self.path.with_name(f"{self.path.stem}-{stamp}{self.path.suffix}")
        with contextlib.suppress(FileNotFoundError):
            os.replace(self.path, backup)
        self._prune()

    def backups(self) -> list[Path]:
        pattern = f"{self.path.stem}-*{self.path.suffix}"
        return sorted(p for p in self.path.parent.glob(pattern) if p != self.path)

    def _prune(self) -> None:
        backups = self.backups()  # oldest first: the names sort by time
        doomed = set()
        if self.max_backups:
            doomed.update(backups[: max(0, len(backups) - self.max_backups)])
        if self.max_age:
            cutoff = time.time() - self.max_age
            doomed.update(p for p in backups if p.stat().st_mtime < cutoff)
        for path in doomed:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class _Stdout:
    def write(self, data: bytes) -> None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()

    def close(self) -> None:
        pass


class LogBackend:
    """``process(event)`` never blocks; ``run()`` (one task) writes; cancelling it
    flushes what is buffered first. The buffer is a deque bounded by ``buffer_size``
    (changed on the event loop only) and an Event that wakes the writer: cheaper per
    event than an asyncio.Queue."""

    def __init__(self, path: str, max_size_mb: int = 0, max_backups: int = 0,
                 max_age_days: int = 0, buffer_size: int = BUFFER_SIZE) -> None:  # fmt: skip
        self.sink: RotatingFile | _Stdout = (
            _Stdout() if path == "-" else RotatingFile(path, max_size_mb, max_backups, max_age_days)
        )
        self.buffer: collections.deque[Buffered] = collections.deque()
        self.buffer_size = buffer_size
        self._wakeup = asyncio.Event()
        self.dropped = 0
        self._warned = 0.0

    def process(self, event: dict[str, Any]) -> None:
        """Buffer the event; one with no object to decode (every Metadata event) is
        buffered as its encoded line, encoded here on the loop where the writer
        encoded it anyway: its dicts die at once instead of waiting up to 50 ms in the
        buffer, where hundreds of them made the garbage collector scan and promote
        them (the same line, the same isolation: a failed encode is b"")."""
        if len(self.buffer) < self.buffer_size:
            if not ("requestObject" in event or "responseObject" in event
                    or CREATED_BODY in event):  # fmt: skip
                self.buffer.append(_encode_one(event))
            else:
                self.buffer.append(event)
            self._wakeup.set()
            return
        self.dropped += 1
        _LOG_ERRORS.inc()
        now = time.monotonic()
        if now - self._warned > WARN_EVERY:
            self._warned = now
            log.warning("audit buffer full: dropping events (%d so far)", self.dropped)

    def _encode(self, batch: list[Buffered]) -> bytes:
        EVENTS.inc(len(batch))  # counted here, off the request path
        return b"".join(e if isinstance(e, bytes) else _encode_one(e) for e in batch)

    def _write_batch(self, batch: list[Buffered]) -> None:
        self.sink.write(self._encode(batch))

    async def _write(self, batch: list[Buffered]) -> None:
        """Events without objects come encoded (``process``: a few microseconds each on
        the loop; a thread holding the GIL for them would stall the loop longer); a
        batch with objects to decode is encoded in the thread (a create's body, read
        for its name, included: a 3 MiB YAML body decoded here held the loop 80-170
        s); the file write itself always in the thread."""
        if any(not isinstance(e, bytes) for e in batch):
            data = await asyncio.to_thread(self._encode, batch)
        else:
            data = self._encode(batch)
        await asyncio.to_thread(self.sink.write, data)

    def _take_batch(self) -> list[Buffered]:
        count = min(len(self.buffer), BATCH_SIZE)
        return [self.buffer.popleft() for _ in range(count)]

    async def run(self) -> None:
        writing: asyncio.Future[None] | None = None
        try:
            while True:
                if not self.buffer:
                    self._wakeup.clear()
                    await self._wakeup.wait()
                if len(self.buffer) < BATCH_SIZE:
                    # gather what arrives meanwhile: one hand-off to the thread per
                    # batch, not per event (a hand-off wakes the loop through its
                    # self-pipe: more CPU than writing the event)
                    await asyncio.sleep(BATCH_WAIT)
                batch = self._take_batch()
                writing = asyncio.ensure_future(self._write(batch))
                try:
                    await asyncio.shield(writing)
                except Exception as e:  # a full disk, a bug: the writer keeps going
                    _LOG_ERRORS.inc(len(batch))
                    log.error("writing audit events: %s", e)
        finally:
            if writing is not None and not writing.done():
                with contextlib.suppress(Exception):
                    await writing  # the batch in the thread finishes before the rest
            rest = list(self.buffer)
            self.buffer.clear()
            if rest:
                with contextlib.suppress(OSError):
                    self._write_batch(rest)  # shutdown: the last events, synchronously
            self.sink.close()
