"""YAML as the server writes it (block style, keys in the object's order, no aliases),
and the child process that writes the YAML of large lists off the event loop.

A YAML LIST of 10,000 pods costs ~10 s of CPU (PyYAML's representer is Python; libyaml
only emits), ~1 ms a pod. On the loop, even in 5 ms steps, that is ten seconds during
which the server's one thread is busy: every time the OS preempts it (a loaded
machine) the loop waits too, and every collection of the garbage its node trees
produce lands in some other request's step. A thread does not help much: it needs the
GIL the loop needs. So the items of a large list are encoded by a child process
(:mod:`proxy.endpoints.yaml_worker` starts it: ``python -m
proxy.endpoints.yaml_encoding``): the loop sends each item's JSON and writes back the
YAML the child returns. This module imports only PyYAML and orjson, so the child is
small (~20 MB) and starts in ~0.1 s.

The child's protocol, over its stdin and stdout: a request is a count ``n`` (4 bytes,
big-endian) then ``n`` JSON documents, each a length (4 bytes) then its bytes; the answer
is a status byte (0: YAML follows, 1: an error's text follows), a length (4 bytes) and
that many bytes: the YAML of each document as :func:`dump_items` writes it. The child
ends when its stdin does (its parent exited or closed it).
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Sequence
from typing import Any, BinaryIO

import orjson
import yaml

__all__ = ["ANSWER", "COUNT", "dump_items", "dump_yaml", "frame", "serve"]

COUNT = struct.Struct(">I")  # a request's count, and each document's length
ANSWER = struct.Struct(">BI")  # status, length

# libyaml's emitter is ~5x faster than PyYAML's; both give the same text for the
# objects an API server stores (they differ only in how they wrap long escaped strings)
_EMITTER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_EMITTER):  # type: ignore[misc]
    """Never anchors and aliases: a value shared by two places (a Table's rows reuse
    their printers' constants) is written in full at each, as Go's YAML encoder does,
    and an item's text never depends on the other items. Safe for API documents,
    which are trees (decoded from JSON, or built from them)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump_yaml(obj: Any) -> bytes:
    """``obj`` as a YAML document (block style, keys in the object's order, no
    aliases)."""
    text: str = yaml.dump(obj, Dumper=_Dumper, sort_keys=False)
    return text.encode()


def dump_items(documents: Sequence[bytes]) -> bytes:
    """Each JSON document as the one item of a block sequence (``dump_yaml([item])``),
    joined: the text of those items inside a list's last key."""
    return b"".join([dump_yaml([orjson.loads(document)]) for document in documents])


def frame(documents: Sequence[bytes]) -> bytes:
    """A request to the child: :func:`dump_items` of ``documents``."""
    parts = [COUNT.pack(len(documents))]
    for document in documents:
        parts += (COUNT.pack(len(document)), document)
    return b"".join(parts)


def _read(stream: BinaryIO, size: int) -> bytes | None:
    data = stream.read(size)
    return data if len(data) == size else None


def serve(requests: BinaryIO, answers: BinaryIO) -> None:
    """The child's loop: answer each request until ``requests`` ends."""
    while (head := _read(requests, COUNT.size)) is not None:
        documents: list[bytes] = []
        for _ in range(COUNT.unpack(head)[0]):
            length = _read(requests, COUNT.size)
            document = _read(requests, COUNT.unpack(length)[0]) if length else None
            if document is None:
                return
            documents.append(document)
        try:
            status, payload = 0, dump_items(documents)
        except Exception as e:  # any failure is the parent's to handle: it encodes itself
            status, payload = 1, f"{type(e).__name__}: {e}".encode()
        answers.write(ANSWER.pack(status, len(payload)) + payload)
        answers.flush()


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
