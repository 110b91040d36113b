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
    ├── CorruptObject               a value that cannot be decoded      → 500 InternalError
    ├── StoreReadError              a LIST met corrupt values           → 500 StorageReadError
    ├── InvalidObject               unsafe delete of a decodable value  → 409 Conflict
    └── InternalStorageError        anything else unexpected            → 500
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
    """``failure`` is set when the storage is down after an unexpected error (a watch
    cache restarting), not merely (re)initializing."""

    def __init__(
        self, message: str = "storage is (re)initializing", retry_after: int = 1, failure: str = ""
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.failure = failure


class Unavailable(StorageError):
    """etcd could not be reached (``timeout`` True when the deadline passed)."""

    def __init__(self, message: str, *, timeout: bool = False) -> None:
        super().__init__(message)
        self.timeout = timeout


class InternalStorageError(StorageError):
    pass


class RequestRejected(StorageError):
    """etcd refused the request itself (InvalidArgument: ``etcdserver: request is too
    large``; ResourceExhausted: over the gRPC message limit, or its space quota).
    ``message`` is etcd's own text, which kube-apiserver passes on unchanged."""


class CorruptObject(StorageError):
    """The value at ``key`` (mod_revision ``revision``) cannot be decoded: not a JSON
    object, not a YAML mapping, ``k8s\\0`` protobuf that the schema cannot decode (or no
    schema), or fields of the wrong type.
    Raised by ``storage.codec``'s decode functions, the one error type a decoder raises.

    ``message`` is upstream's ``storage.NewCorruptObjError`` text (kube-apiserver 1.37,
    ``storage/errors.go`` StorageError.Error), which clients see in the 500 it becomes."""

    def __init__(self, key: str, detail: str, revision: int = 0) -> None:
        self.detail = detail
        self.revision = revision
        super().__init__(
            "StorageError: corrupt object, Code: 7, Key: "
            f"{key}, ResourceVersion: 0, AdditionalErrorMsg: "
            f"object not decodable revision={revision}: {detail}",
            key,
        )

    def at(self, key: str, revision: int) -> CorruptObject:
        """The same failure attributed to ``key`` at ``revision``."""
        return CorruptObject(key, self.detail, revision)


class StoreReadError(StorageError):
    """A LIST from etcd met corrupt values (upstream's aggregatedStorageError with
    AllowUnsafeMalformedObjectDeletion): ``corrupt`` holds up to ``MAX_CORRUPT`` of them;
    ``too_many`` is set when the walk stopped at that cap."""

    MAX_CORRUPT = 100

    def __init__(self, corrupt: list[CorruptObject], *, too_many: bool = False) -> None:
        self.corrupt = corrupt
        self.too_many = too_many
        super().__init__(f"unable to transform or decode {len(corrupt)} objects", "list")


UNSAFE_DELETE_OF_DECODABLE = (
    "unsafe deletion is not allowed because the object is decodable from storage"
)


class InvalidObject(StorageError):
    """An unsafe delete (``ignoreStoreReadErrorWithClusterBreakingPotential``) found a
    value that decodes: upstream's ``storage.NewInvalidObjError`` text."""

    def __init__(self, key: str, detail: str) -> None:
        super().__init__(
            "StorageError: invalid object, Code: 4, Key: "
            f"{key}, ResourceVersion: 0, AdditionalErrorMsg: {detail}",
            key,
        )
