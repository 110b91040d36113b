"""The contracts between the handlers and a resource's REST storage, after
k8s.io/apiserver's ``pkg/registry/rest`` (``create.go``, ``update.go``, ``rest.go``).

A handler decodes the request, runs mutating admission and the field manager, and then
calls the storage of the route (``proxy.registry.store.Store`` for a resource, a small
storage of its own for a subresource such as ``scale``) with:

- a :class:`Context`: the request's namespace, user and dry-run flag (upstream's
  ``context.Context`` values), never the HTTP request;
- the object (create) or an :class:`UpdatedObjectInfo` (update and patch: the new object
  computed from the current one inside the optimistic retry loop);
- ``create_validation`` / ``update_validation``: validating admission, passed in
  (upstream's ``rest.ValidateObjectFunc`` / ``ValidateObjectUpdateFunc``).

The storage runs the kind's :class:`Strategy` (``prepare_for_create``, ``default``,
``validate``, ``canonicalize`` and the kind's own write rules), then the validation it was
given, then storage; storage errors become a Status once (``proxy.registry.store``).
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeGuard, runtime_checkable

from proxy.registry.deletion import DeletionRules
from proxy.registry.resources import ResourceInfo
from proxy.request.delete_options import DeleteOptions
from proxy.request.user import UserInfo
from storage.interfaces import GetOptions, JSONObject, StoredObject

__all__ = [
    "ConnectTarget",
    "Connecter",
    "Context",
    "Deleter",
    "Getter",
    "NamedCreater",
    "ResetFields",
    "Strategy",
    "SubresourceStorage",
    "UpdatedObjectInfo",
    "Updater",
    "ValidateDeleteFunc",
    "ValidateObjectFunc",
    "ValidateObjectUpdateFunc",
    "is_connecter",
    "is_deleter",
    "is_getter",
    "is_named_creater",
    "is_subresource_storage",
    "is_updater",
    "validate_nothing",
    "validate_update_nothing",
]


@dataclass(frozen=True)
class Context:
    """What a storage may know of the request (upstream's ``request.WithNamespace``,
    ``WithUser``, and the options' ``dryRun``). ``authorized``: the request went through
    authentication and authorization (the secure port); kind rules that judge the user
    (RBAC escalation prevention) apply only then."""

    namespace: str = ""
    user: UserInfo | None = None
    dry_run: bool = False
    authorized: bool = False
    # the request's body was large: the strategy and the field manager, which cost in
    # proportion to the object (a 3 MB ConfigMap's managedFields take a second), run
    # beside the event loop so that no other request waits for them (issue 23 §2)
    large: bool = False


# validating admission of a create: (object) -> None or a Status error
ValidateObjectFunc = Callable[[JSONObject], Awaitable[None]]
# validating admission of an update: (object, old object)
ValidateObjectUpdateFunc = Callable[[JSONObject, JSONObject], Awaitable[None]]
# validating admission of a delete: (the object being deleted; None when it cannot be
# read: the unsafe delete of a corrupt value)
ValidateDeleteFunc = Callable[[JSONObject | None], Awaitable[None]]


async def validate_nothing(obj: JSONObject) -> None:
    """``rest.ValidateAllObjectFunc``: the create validation of a server without admission."""


async def validate_update_nothing(obj: JSONObject, old: JSONObject) -> None:
    """``rest.ValidateAllObjectUpdateFunc``."""


# field paths (each a tuple of field names: ``("spec", "finalizers")``) that a route's
# writes do not own, because its strategy resets them (upstream's ``GetResetFields``)
ResetFields = tuple[tuple[str, ...], ...]


class Strategy(Protocol):
    """A kind's rules for writes (upstream's ``RESTCreateStrategy``,
    ``RESTUpdateStrategy`` and ``RESTDeleteStrategy``), in the order the store calls
    them:

    - create: ``prepare_for_create`` → ``default`` → ``validate`` → ``check_write`` →
      ``canonicalize``;
    - update: ``prepare_for_update`` → ``default`` → ``validate_update`` →
      ``check_write`` → ``canonicalize``;
    - delete: ``before_delete``, then ``deletion``'s rules (``proxy.registry.deletion``).

    ``validate*`` raise a 422 Status naming every violation; ``check_write`` is where a
    kind's own admission-like rules plug in (RBAC escalation prevention: 403). A
    subresource with its own rules (``status``) has its own strategy."""

    @property
    def deletion(self) -> DeletionRules:
        """What the kind adds to a DELETE (upstream's ``RESTGracefulDeleteStrategy`` and
        the kinds' own Delete): grace period, Terminating, its own finalizers."""
        ...

    def allow_create_on_update(self) -> bool:
        """Whether an update of an absent object creates it (``AllowCreateOnUpdate``)."""
        ...

    def checks_required_fields(self) -> bool:
        """Whether ``validate`` words missing required fields itself (else the request
        body's field validation reports the schema's required fields)."""
        ...

    def checks_types(self) -> bool:
        """Whether ``validate`` reports wrong JSON types itself, with its other errors
        (a custom resource's schema validation; else the request body's field
        validation reports them)."""
        ...

    def reset_fields(self) -> ResetFields:
        """The fields this route's writes do not change, so no manager owns them through
        it (``ResetFieldsStrategy.GetResetFields``): the field manager leaves them out."""
        ...

    def check_write(self, ctx: Context, obj: JSONObject) -> None: ...

    def prepare_for_create(self, ctx: Context, obj: JSONObject) -> JSONObject: ...

    def prepare_for_update(self, ctx: Context, new: JSONObject, old: JSONObject) -> JSONObject:
        ...

    def default(self, obj: JSONObject) -> None: ...

    def validate(self, ctx: Context, obj: JSONObject) -> None: ...

    def validate_update(self, ctx: Context, new: JSONObject, old: JSONObject) -> None: ...

    def canonicalize(self, obj: JSONObject) -> None: ...

    async def before_delete(
        self, ctx: Context, name: str, current: JSONObject | None, options: DeleteOptions
    ) -> None:
        """A kind's rules before its objects are deleted (after validating admission);
        ``current`` is None when the object does not exist (the delete then answers
        404, unless this raises first)."""
        ...


class UpdatedObjectInfo(Protocol):
    """The new object of an update or patch (upstream's ``rest.UpdatedObjectInfo``),
    computed from the object as stored now, inside the store's retry loop.

    ``updated_object(current)``: the object the request makes of ``current`` (``{}``
    when absent and the store may create it), after mutating admission. ``managed``:
    the field manager's record of the write on the object the strategy prepared (here,
    not before the strategy, so that fields the strategy resets, such as the status of
    the main resource, are not counted as the request's)."""

    async def updated_object(self, ctx: Context, current: JSONObject) -> JSONObject: ...

    def managed(self, current: JSONObject, prepared: JSONObject) -> JSONObject: ...


# ----------------------------------------------------- what a route's storage can do
# (upstream's rest.Getter, rest.Updater, rest.NamedCreater: the installer serves the
# verbs its storage implements, and the handlers call nothing else)


@runtime_checkable
class Getter(Protocol):
    async def get_object(self, ctx: Context, name: str, opts: GetOptions) -> StoredObject: ...


@runtime_checkable
class Updater(Protocol):
    async def update_object(
        self,
        ctx: Context,
        name: str,
        obj_info: UpdatedObjectInfo,
        create_validation: ValidateObjectFunc,
        update_validation: ValidateObjectUpdateFunc,
        *,
        force_allow_create: bool = False,
    ) -> tuple[StoredObject, bool]:
        """(the object as stored, whether the update created it)."""
        ...


@runtime_checkable
class Deleter(Protocol):
    async def delete_object(
        self,
        ctx: Context,
        name: str,
        delete_validation: ValidateDeleteFunc,
        options: DeleteOptions,
    ) -> tuple[StoredObject, bool]:
        """(the object as the delete left it, whether it was removed)."""
        ...


@runtime_checkable
class NamedCreater(Protocol):
    """A create on an object's path (``pods/NAME/binding``): the answer is a Status."""

    async def create_named(
        self, ctx: Context, name: str, obj: JSONObject, create_validation: ValidateObjectFunc
    ) -> JSONObject: ...


@runtime_checkable
class SubresourceStorage(Protocol):
    """A subresource served by a storage of its own (``scale``, ``binding``), which
    implements some of :class:`Getter`, :class:`Updater`, :class:`NamedCreater`;
    ``kind`` is what its requests and answers carry (``autoscaling/v1 Scale``)."""

    @property
    def kind(self) -> ResourceInfo: ...


@dataclass(frozen=True)
class ConnectTarget:
    """Where a connect request goes (upstream's ``ResourceLocation``: a URL and the
    transport to reach it). ``upgrade_required``: only an upgraded connection (WebSocket,
    SPDY) is served there (exec, attach, portforward); ``error_resource``: the
    subresource a non-2xx answer of the target is reported as (``pods/log``: upstream's
    ``GenericHttpResponseChecker``), "" to pass the answer through as the target wrote
    it (the proxy subresources); ``transport``: a factory of the connector that reaches
    the URL (the egress selector's cluster network for pod IPs: an ``aiohttp``
    connector, which this layer does not import), None to dial it directly."""

    url: str
    tls: ssl.SSLContext | bool = True  # True: the default verification
    upgrade_required: bool = False
    error_resource: str = ""
    name: str = ""
    transport: Callable[[], Any] | None = None


@runtime_checkable
class Connecter(Protocol):
    """A subresource served by proxying to another server (upstream's
    ``rest.Connecter``: ``pods/exec``, ``pods/log``, ``nodes/proxy``):
    ``connect_methods`` are the HTTP methods it answers; ``connect`` validates the
    request's options (the query; ``path``: what follows the subresource in the URL,
    for the proxy subresources) and resolves where it goes."""

    @property
    def connect_methods(self) -> tuple[str, ...]: ...

    async def connect(
        self, ctx: Context, name: str, options: Mapping[str, Sequence[str]], path: str
    ) -> ConnectTarget: ...


# ------------------------------------------- which of them a storage is, per class
# Python 3.11's isinstance() against a runtime-checkable Protocol walks every member
# with hasattr on each call (~5-10 µs); the handlers ask it several times per request.
# A storage's capabilities are its class's methods and properties, so the answer is
# decided once per class (for the first instance seen) and kept.


def _per_class(protocol: object) -> Callable[[object], bool]:
    decided: dict[type, bool] = {}

    def check(obj: object) -> bool:
        found = decided.get(type(obj))
        if found is None:
            found = decided[type(obj)] = isinstance(obj, protocol)  # type: ignore[arg-type]
        return found

    return check


_GETTER, _UPDATER, _DELETER = _per_class(Getter), _per_class(Updater), _per_class(Deleter)
_NAMED_CREATER, _SUBRESOURCE = _per_class(NamedCreater), _per_class(SubresourceStorage)
_CONNECTER = _per_class(Connecter)


def is_getter(storage: object) -> TypeGuard[Getter]:
    return _GETTER(storage)


def is_updater(storage: object) -> TypeGuard[Updater]:
    return _UPDATER(storage)


def is_deleter(storage: object) -> TypeGuard[Deleter]:
    return _DELETER(storage)


def is_named_creater(storage: object) -> TypeGuard[NamedCreater]:
    return _NAMED_CREATER(storage)


def is_subresource_storage(storage: object) -> TypeGuard[SubresourceStorage]:
    return _SUBRESOURCE(storage)


def is_connecter(storage: object) -> TypeGuard[Connecter]:
    return _CONNECTER(storage)
