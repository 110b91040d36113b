"""Plain result types of the etcd client. Every response carries the header revision.

These are frozen dataclasses decoupled from the generated protobuf classes, so callers
(storage, cacher) never touch protobuf objects and tests can build them by hand.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TypedDict


@dataclass(frozen=True, slots=True)
class KeyValue:
    key: bytes
    value: bytes
    create_revision: int
    mod_revision: int
    version: int
    lease: int = 0


class EventType(enum.Enum):
    PUT = 0
    DELETE = 1


@dataclass(frozen=True, slots=True)
class Event:
    """One change. For DELETE, ``kv`` has the key and ``mod_revision`` = the deletion
    revision and an empty value; ``prev_kv`` (when requested) holds the last value."""

    type: EventType
    kv: KeyValue
    prev_kv: KeyValue | None = None


@dataclass(frozen=True, slots=True)
class WatchBatch:
    """One WatchResponse delivered to a watch's consumer.

    ``events`` are in revision order. A batch with no events and ``progress_notify`` True
    is a progress notification: every change of this watch up to ``revision`` has been
    delivered.
    """

    revision: int
    events: tuple[Event, ...] = ()
    progress_notify: bool = False


@dataclass(frozen=True, slots=True)
class GetResult:
    revision: int
    kv: KeyValue | None


class RangeOptions(TypedDict, total=False):
    """How a Range reads, beyond its keys (etcd's ``RangeRequest``; each absent field is
    0/False): at most ``limit`` keys (0: all), at ``revision`` (0: newest), keys without
    values, only the count, or a serializable (member-local) read instead of a
    linearizable one. Written once, here, for every ``range``-shaped call."""

    limit: int
    revision: int
    keys_only: bool
    count_only: bool
    serializable: bool


@dataclass(frozen=True, slots=True)
class RangeResult:
    revision: int
    kvs: list[KeyValue] = field(default_factory=list)
    more: bool = False
    count: int = 0


@dataclass(frozen=True, slots=True)
class TxnResult:
    """Outcome of a guarded write (create / optimistic put / optimistic delete).

    ``revision`` is the header revision: the write's revision when ``succeeded``.
    On success ``kv`` is the written key-value (put) or the deleted one (delete);
    on failure it is the key's current value (None if absent).
    """

    revision: int
    succeeded: bool
    kv: KeyValue | None


@dataclass(frozen=True, slots=True)
class Status:
    endpoint: str
    version: str
    revision: int
    member_id: int
    leader: int
    raft_term: int
    db_size: int
    db_size_in_use: int
    is_learner: bool = False
    errors: tuple[str, ...] = ()

    @property
    def version_tuple(self) -> tuple[int, int, int]:
        parts = [*self.version.split("-")[0].split("."), "0", "0", "0"][:3]
        return int(parts[0]), int(parts[1]), int(parts[2])


@dataclass(frozen=True, slots=True)
class Member:
    id: int
    name: str
    peer_urls: tuple[str, ...]
    client_urls: tuple[str, ...]
    is_learner: bool = False


@dataclass(frozen=True, slots=True)
class Lease:
    id: int
    ttl: int
    revision: int
