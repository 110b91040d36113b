"""Errors of the etcd client, translated from gRPC status codes in exactly one place
(``etcdclient._translate``), never from message text.

    EtcdError
    ├── Unavailable          no endpoint reachable / connection lost (retriable)
    │   └── ClientClosed     the client was closed (calls and watches after close())
    ├── DeadlineExceeded     the request's deadline passed (retriable)
    ├── Compacted            the requested revision was compacted (.compact_revision)
    ├── FutureRevision       the requested revision is newer than the store's
    ├── InvalidArgument      etcd rejected the request's arguments
    ├── PermissionDenied     auth/TLS identity refused
    ├── ResourceExhausted    request or quota too large
    ├── WatchCanceled        etcd canceled a watch for a reason other than compaction
    ├── NotFound             etcd has no such lease / member
    └── ConfigError          the client's own configuration is unusable (URL, TLS files)
"""

from __future__ import annotations


class EtcdError(Exception):
    """Base of every error this package raises."""


class Unavailable(EtcdError):
    """No endpoint could serve the request (down, unreachable, TLS failure)."""


class DeadlineExceeded(EtcdError):
    """The request did not complete within its timeout."""


class Compacted(EtcdError):
    """The revision asked for is older than etcd's compact revision."""

    def __init__(self, compact_revision: int, message: str = "") -> None:
        self.compact_revision = compact_revision
        super().__init__(message or f"required revision has been compacted ({compact_revision})")


class FutureRevision(EtcdError):
    """The revision asked for is newer than etcd's current revision."""


class InvalidArgument(EtcdError):
    """etcd rejected the arguments of the request."""


class PermissionDenied(EtcdError):
    """Authentication or authorization failed."""


class ResourceExhausted(EtcdError):
    """Too large a request, or etcd's space quota is exhausted."""


class WatchCanceled(EtcdError):
    """etcd canceled a watch (not for compaction); ``reason`` is etcd's cancel_reason."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"watch canceled by etcd: {reason}")


class ClientClosed(Unavailable):
    """The client was closed: raised by calls made and watches iterated after ``close()``."""


class NotFound(EtcdError):
    """etcd has no such object (a lease or member id)."""


class ConfigError(EtcdError):
    """The client's own configuration is unusable: a malformed endpoint or unreadable TLS
    files. Raised by the constructor or ``connect()``, never retriable."""
