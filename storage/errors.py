"""Storage errors, raised by the etcd3 store and by the cacher alike.

They carry the storage key and the facts a caller needs, not HTTP wording: the REST
layer's generic store (``proxy/registry/store.py``) turns each into a Kubernetes
``Status`` exactly once, adding the qualified resource and name (as kube-apiserver's
``storeerr`` package does).
etcd client errors are translated into these in one place in the etcd3 store.

    StorageError
    ├── NotFound                    key absent                          → 404 NotFound
    ├── AlreadyExists               create of an existing key           → 409 AlreadyExists
    ├── Conflict                    stale resourceVersion on update     → 409 Conflict
    ├── PreconditionFailed          uid / resourceVersion precondition  → 409 Conflict
    ├── InvalidResourceVersion      unparsable resourceVersion          → 400 BadRequest
    ├── InvalidContinue             bad continue token                  → 400 BadRequest
    ├── TooLargeResourceVersion     RV not reached within the wait      → 504 Timeout
    ├── Expired                     compacted RV / continue token       → 410 Expired
    ├── NotReady                    cache (re)initializing              → 429 TooManyRequests
    ├── Unavailable                 etcd unreachable / timed out        → 503 / 504
    └── InternalStorageError        undecodable value, etc.             → 500
"""

from __future__ import annotations


class StorageError(Exception):
    def __init__(self, message: str, key: str = "") -> None:
        super().__init__(message)
        self.key = key
        self.message = message


class NotFound(StorageError):
    def __init__(self, key: str) -> None:
        super().__init__(f"key not found: {key}", key)


class AlreadyExists(StorageError):
    def __init__(self, key: str) -> None:
        super().__init__(f"key exists: {key}", key)


class Conflict(StorageError):
    """The object has been modified (stale resourceVersion)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"resource version conflict: {key}", key)


class PreconditionFailed(StorageError):
    """A delete/update precondition did not hold. ``message`` is the upstream detail,
    e.g. ``Precondition failed: UID in precondition: B, UID in object meta: A``."""


class InvalidResourceVersion(StorageError):
    """``message`` is the upstream text, e.g. ``invalid resource version: abc``."""


class InvalidContinue(StorageError):
    """``message`` is the upstream text, ``invalid continue token: ...``."""


class TooLargeResourceVersion(StorageError):
    def __init__(self, resource_version: int, current: int) -> None:
        super().__init__(
            f"Too large resource version: {resource_version}, current: {current}"
        )
        self.resource_version = resource_version
        self.current = current


class Expired(StorageError):
    """410 Gone. ``continue_token`` is set for a continue past compaction (a fresh
    token the client may use to restart, rv -1)."""

    def __init__(self, message: str, continue_token: str = "") -> None:
        super().__init__(message)
        self.continue_token = continue_token


class NotReady(StorageError):
    def __init__(self, message: str = "storage is (re)initializing", retry_after: int = 1) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Unavailable(StorageError):
    """etcd could not be reached (``timeout`` True when the deadline passed)."""

    def __init__(self, message: str, *, timeout: bool = False) -> None:
        super().__init__(message)
        self.timeout = timeout


class InternalStorageError(StorageError):
    pass
