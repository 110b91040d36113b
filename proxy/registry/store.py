"""The generic store of one resource, after kube-apiserver's
``k8s.io/apiserver/pkg/registry/generic/registry/store.go``: what handlers call to
read and write objects. It knows the resource's keys, sends writes to a dry-run view
when asked, and is **the one place storage errors become Status errors**, per verb, as
upstream's ``storeerr.InterpretGetError`` / ``InterpretListError`` /
``InterpretCreateError`` / ``InterpretUpdateError`` / ``InterpretDeleteError`` /
``InterpretWatchError`` (``k8s.io/apiserver/pkg/storage/errors/storage.go``) do::

    handlers ──▶ Store (keys, dry run, errors → Status) ──▶ storage.Interface
                                                              (cacher or etcd3)

Per verb (the words come from ``apierrors.from_storage_error``):

- every verb: NotFound → 404 with the object's name (a LIST's name is empty);
  AlreadyExists on create → 409 AlreadyExists, on update/delete → 409 Conflict;
  stale resourceVersion and failed preconditions → 409 Conflict; InvalidResourceVersion
  and InvalidContinue → 400; TooLargeResourceVersion → 504 with retryAfterSeconds 1;
  Expired → 410; cache not ready → 429 with Retry-After; undecodable data → 500.
- etcd unreachable or too slow (``storage.errors.Unavailable``) → what a client of
  kube-apiserver gets when etcd is down: the request waits on etcd until its deadline
  and the timeout filter answers 504 ``Timeout: request did not complete within the
  allotted timeout``, **without** retryAfterSeconds or a ``Retry-After`` header
  (``WithTimeoutForNonLongRunningRequests``; upstream's etcd3 store never reports
  "unreachable", so ``NewServerTimeout``'s retry-after-2 answer is never reached). So
  client-go does not retry (it retries 5xx only with Retry-After) and ``kubectl get``
  gives up after one answer, as against kube-apiserver.

Deletion follows ``proxy.registry.deletion`` (finalizers, and with ``lifecycle`` —
``--lifecycle-controllers`` — graceful deletion, propagationPolicy and namespace
Terminating): ``delete`` marks an object that something keeps and removes the rest;
``update`` removes an object whose last finalizer the update lifted.

A storage error never escapes this module: a handler that reaches storage any other way
is a bug that the panic filter answers 500.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Literal, ParamSpec, TypeVar

from proxy import apierrors
from proxy.registry import before_delete, deletion
from proxy.registry.dry_run import DryRunStore
from proxy.registry.hooks import Finish, StoreHooks
from proxy.registry.resources import ResourceInfo
from proxy.registry.rest import (
    Context,
    Strategy,
    UpdatedObjectInfo,
    ValidateDeleteFunc,
    ValidateObjectFunc,
    ValidateObjectUpdateFunc,
)
from proxy.registry.storage_factory import ResourceStorage
from storage import errors as serr
from storage.interfaces import (
    AttrsFunc,
    GetOptions,
    Interface,
    JSONObject,
    ListOptions,
    ListResult,
    Preconditions,
    StoredObject,
    UpdateFunc,
    ValidateDeletion,
    Watcher,
)

if TYPE_CHECKING:  # the request's options, parsed by the handler layer
    from proxy.request.delete_options import DeleteOptions

__all__ = ["Store", "Verb", "interpret_storage_error"]

log = logging.getLogger("watchcache.proxy")
_P = ParamSpec("_P")
_T = TypeVar("_T")

Verb = Literal["get", "list", "watch", "create", "update", "delete"]


def interpret_storage_error(
    err: serr.StorageError, verb: Verb, resource: ResourceInfo, name: str = ""
) -> apierrors.StatusError:
    """The Status a client gets for ``err`` raised by storage during ``verb`` on
    ``resource``/``name`` (upstream's ``storeerr.Interpret<Verb>Error``)."""
    qualified = resource.qualified
    if isinstance(err, serr.Unavailable):  # the client's Status says only "Timeout"
        log.warning("%s %s %r: %s", verb, qualified, name, err.message)
    if verb == "list":
        name = ""  # InterpretListError: NewNotFound(qualifiedResource, "")
    if verb in ("update", "delete") and isinstance(err, serr.AlreadyExists):
        return apierrors.conflict(qualified, name, err.message)
    return apierrors.from_storage_error(err, qualified, name)


def _resource_version(obj: JSONObject) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _without_rv(obj: JSONObject) -> JSONObject:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "resourceVersion"}
    return {**obj, "metadata": meta}


class Store:
    """One resource's generic store over its storage (see the module docstring).

    Keys: ``namespace`` is ignored for cluster-scoped resources. Every method raises
    only ``apierrors.StatusError`` for storage failures (plus whatever an update or
    deletion function of the caller raises, unchanged)."""

    def __init__(
        self,
        rs: ResourceStorage,
        strategy: Strategy,
        *,
        lifecycle: bool = False,
        hooks: StoreHooks | None = None,
    ) -> None:
        self.rs = rs
        self.strategy = strategy
        self.lifecycle = lifecycle
        self.hooks = hooks  # the resource's own steps around writes (proxy.registry.hooks)

    @property
    def resource(self) -> ResourceInfo:
        return self.rs.resource

    @property
    def get_attrs(self) -> AttrsFunc:
        return self.rs.get_attrs

    def object_key(self, namespace: str, name: str) -> str:
        return self.rs.object_key(namespace, name)

    def list_key(self, namespace: str) -> str:
        return self.rs.list_key(namespace)

    @contextlib.contextmanager
    def _interpret(self, verb: Verb, name: str = "") -> Iterator[None]:
        try:
            yield
        except serr.StorageError as e:
            raise interpret_storage_error(e, verb, self.resource, name) from None

    def _writer(self, dry_run: bool) -> Interface | DryRunStore:
        return DryRunStore(self.rs.store) if dry_run else self.rs.store

    # ------------------------------------------------------------------------- reads

    async def get(self, namespace: str, name: str, opts: GetOptions | None = None) -> StoredObject:
        with self._interpret("get", name):
            return await self.rs.store.get(self.object_key(namespace, name), opts or GetOptions())

    async def list(self, namespace: str, opts: ListOptions) -> ListResult:
        with self._interpret("list"):
            return await self.rs.store.get_list(self.list_key(namespace), opts)

    async def watch(self, namespace: str, opts: ListOptions) -> Watcher:
        with self._interpret("watch"):
            return await self.rs.store.watch(self.list_key(namespace), opts)

    async def get_object(self, ctx: Context, name: str, opts: GetOptions) -> StoredObject:
        """``rest.Getter.Get``."""
        return await self.get(ctx.namespace, name, opts)

    # ------------------------------------------------- writes through the strategy

    @staticmethod
    async def _beside(
        ctx: Context, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs
    ) -> _T:
        """``fn(*args)``: here, or in the loop's executor for a large object
        (``ctx.large``); ``fn`` works on the request's own object only."""
        if not ctx.large:
            return fn(*args, **kwargs)
        return await asyncio.to_thread(fn, *args, **kwargs)

    def _before_create(self, ctx: Context, obj: JSONObject) -> JSONObject:
        """upstream's ``rest.BeforeCreate``, plus the kind's write rules."""
        obj = self.strategy.prepare_for_create(ctx, obj)
        self.strategy.default(obj)
        self.strategy.validate(ctx, obj)
        self.strategy.check_write(ctx, obj)
        self.strategy.canonicalize(obj)
        return obj

    def _before_update(self, ctx: Context, new: JSONObject, old: JSONObject) -> JSONObject:
        """upstream's ``rest.BeforeUpdate``, plus the kind's write rules."""
        new = self.strategy.prepare_for_update(ctx, new, old)
        self.strategy.default(new)
        self.strategy.validate_update(ctx, new, old)
        self.strategy.check_write(ctx, new)
        self.strategy.canonicalize(new)
        return new

    async def create_object(
        self,
        ctx: Context,
        obj: JSONObject,
        create_validation: ValidateObjectFunc,
        *,
        managed: Callable[[JSONObject], JSONObject] | None = None,
    ) -> StoredObject:
        """``rest.Creater.Create``: the hooks' ``begin_create``, the strategy's
        preparation, defaulting and validation, then ``create_validation`` (validating
        admission, which sees the generated name), then ``managed`` (the field manager's
        record of the write), then storage; the hooks' write then committed or reverted."""
        finish = await self.hooks.begin_create(ctx, obj) if self.hooks else None
        try:
            obj = await self._beside(ctx, self._before_create, ctx, obj)
            await create_validation(obj)
            if managed is not None:
                obj = await self._beside(ctx, managed, obj)
            name = str(obj["metadata"]["name"])
            stored = await self.create(ctx.namespace, name, obj, dry_run=ctx.dry_run)
        except BaseException:
            if finish is not None:
                await finish.revert()
            raise
        if finish is not None:
            await finish.commit()
        return stored

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
        """``rest.Updater.Update``: (the stored object, whether it was created). Inside the
        optimistic retry loop: the new object from ``obj_info``, a stale resourceVersion
        refused (409), the strategy's preparation and validation, the field manager's
        record, then ``update_validation``; an object equal to the stored one is not
        written. An absent object is 404 unless the strategy allows create-on-update
        (or ``force_allow_create``: server-side apply), then it is created as
        :meth:`create_object` creates."""
        allow_create = force_allow_create or self.strategy.allow_create_on_update()
        key = self.object_key(ctx.namespace, name)
        created = False
        pending: list[Finish] = []  # the hooks' begin of the attempt under way

        async def begin(new: JSONObject, current: JSONObject) -> None:
            """The hooks' begin for this attempt, the previous attempt's reverted."""
            if self.hooks is None:
                return
            while pending:
                await pending.pop().revert()
            hooks = self.hooks
            finish = await (
                hooks.begin_update(ctx, new, current) if current else hooks.begin_create(ctx, new)
            )
            pending.append(finish)

        async def try_update(current: JSONObject) -> JSONObject:
            nonlocal created
            created = not current
            if not current:
                if not allow_create:
                    raise serr.NotFound(key)
                fresh = await obj_info.updated_object(ctx, {})
                await begin(fresh, current)
                obj = await self._beside(ctx, self._before_create, ctx, fresh)
                await create_validation(obj)
                return await self._beside(ctx, obj_info.managed, {}, obj)
            new = await obj_info.updated_object(ctx, current)
            await begin(new, current)
            new_rv = _resource_version(new)
            if new_rv and new_rv != _resource_version(current):
                raise serr.Conflict(key)
            prepared = await self._beside(ctx, self._before_update, ctx, new, current)
            updated = await self._beside(ctx, obj_info.managed, current, prepared)
            await update_validation(updated, current)
            return current if _without_rv(current) == _without_rv(updated) else updated

        try:
            stored = await self.update(
                ctx.namespace, name, try_update, ignore_not_found=allow_create,
                dry_run=ctx.dry_run,
            )  # fmt: skip
        except BaseException:
            for finish in pending:
                await finish.revert()
            raise
        for finish in pending:
            await finish.commit()
        if self.hooks and deletion.should_delete_during_update(self.strategy.deletion, stored.obj):
            await self.hooks.after_delete(ctx, stored.obj)  # the update removed it
        return stored, created

    async def delete_object(
        self,
        ctx: Context,
        name: str,
        delete_validation: ValidateDeleteFunc,
        options: DeleteOptions,
    ) -> tuple[StoredObject, bool]:
        """``rest.GracefulDeleter.Delete``: validating admission with the object being
        deleted (read first; upstream runs it inside the delete's precondition check),
        the strategy's ``before_delete``, then :meth:`delete` with the options'
        preconditions checked on the state the delete is guarded by. The unsafe delete
        of a corrupt value (``ignore_store_read_error``) has no object to show:
        validating admission runs without one, as upstream's corrupt-object deleter."""
        if options.ignore_store_read_error:
            await delete_validation(None)
            return await self.delete(
                ctx.namespace, name, dry_run=ctx.dry_run, ignore_store_read_error=True
            )
        current: JSONObject | None = None
        try:
            current = (await self.get(ctx.namespace, name)).copy()
        except apierrors.StatusError as e:
            if e.code != 404:
                raise
        if current is not None:  # (absent: the delete answers 404 itself)
            await delete_validation(current)
        await self.strategy.before_delete(ctx, name, current, options)
        check = before_delete.validate_deletion(self.resource, options.preconditions)
        stored, removed = await self.delete(
            ctx.namespace, name, None, validate_deletion=check, dry_run=ctx.dry_run,
            options=options, read=current,
        )  # fmt: skip
        if removed and self.hooks is not None:
            await self.hooks.after_delete(ctx, stored.obj)
        return stored, removed

    # ------------------------------------------------------------------------ writes

    async def create(
        self, namespace: str, name: str, obj: JSONObject, *, dry_run: bool = False
    ) -> StoredObject:
        with self._interpret("create", name):
            return await self._writer(dry_run).create(self.object_key(namespace, name), obj)

    async def update(
        self,
        namespace: str,
        name: str,
        try_update: UpdateFunc,
        *,
        preconditions: Preconditions | None = None,
        ignore_not_found: bool = False,
        dry_run: bool = False,
    ) -> StoredObject:
        """The optimistic read-modify-write of storage's ``guaranteed_update``; an object
        being deleted that the update left with nothing to wait for is then removed
        (upstream's ``ShouldDeleteDuringUpdate``) and returned as deleted."""
        key = self.object_key(namespace, name)
        writer = self._writer(dry_run)
        with self._interpret("update", name):
            stored = await writer.guaranteed_update(
                key, preconditions, try_update, ignore_not_found=ignore_not_found
            )
        if not deletion.should_delete_during_update(self.strategy.deletion, stored.obj):
            return stored
        uid = (stored.obj.get("metadata") or {}).get("uid")
        try:
            with self._interpret("delete", name):
                return await writer.delete(key, Preconditions(uid=uid))
        except apierrors.StatusError as e:
            # Deletion is racy (upstream's deleteWithoutFinalizers): another request that
            # emptied the finalizers, or a controller deleting the object now that none
            # holds it (the namespace controller's next look, a CRD's finalizer), may
            # have removed it first. The update succeeded: answer with it, not a 404.
            if e.code != 404:
                raise
            return stored

    async def delete(
        self,
        namespace: str,
        name: str,
        preconditions: Preconditions | None = None,
        *,
        validate_deletion: ValidateDeletion | None = None,
        dry_run: bool = False,
        ignore_store_read_error: bool = False,
        options: DeleteOptions | None = None,
        read: JSONObject | None = None,
    ) -> tuple[StoredObject, bool]:
        """DELETE: (the object as it is now, whether it was removed), as upstream's
        ``Store.Delete``. With ``options`` the deletion rules of
        ``proxy.registry.deletion`` apply: an object kept by finalizers (or, with
        ``lifecycle``, a grace period or a terminating namespace) is updated in place
        (``validate_deletion`` runs on it first) and not removed. Without ``options``
        the object is removed. A pod removed at once is first written with its
        ``deletionTimestamp`` and ``deletionGracePeriodSeconds: 0`` and answered so
        (``deletion.DeleteNow.marked``). ``ignore_store_read_error``: the unsafe delete
        of a value that cannot be decoded (``AllowUnsafeMalformedObjectDeletion``).
        ``read``: the object as etcd held it a moment ago (``delete_object``'s read), on
        which a deletion that nothing keeps is decided (see :meth:`_delete_as_read`)."""
        key = self.object_key(namespace, name)
        writer = self._writer(dry_run)
        if options is not None and not ignore_store_read_error:
            opts = options
            if read is not None and not dry_run:
                removed = await self._delete_as_read(key, name, read, opts, validate_deletion)
                if removed is not None:
                    return removed, True

            delete_after: list[bool] = []  # set by mark: written marked, now remove it

            async def mark(current: JSONObject) -> JSONObject:
                delete_after.clear()
                if validate_deletion is not None:
                    await validate_deletion(current)
                try:
                    return deletion.mark(
                        self.strategy.deletion, current, opts, lifecycle=self.lifecycle
                    )
                except deletion.DeleteNow as now:
                    if now.marked is None:
                        raise
                    delete_after.append(True)
                    return now.marked

            try:
                with self._interpret("delete", name):
                    marked = await writer.guaranteed_update(key, preconditions, mark)
                if not delete_after:
                    return marked, False
                if dry_run:  # nothing was written: the marked object is the answer
                    return marked, True
                uid = (marked.obj.get("metadata") or {}).get("uid")
                preconditions = Preconditions(uid, str(marked.resource_version))
                validate_deletion = None  # validated on the marked write
            except deletion.DeleteNow:
                pass
        with self._interpret("delete", name):
            removed = await writer.delete(
                key, preconditions, validate_deletion,
                ignore_store_read_error=ignore_store_read_error,
            )  # fmt: skip
        return removed, True

    async def _delete_as_read(
        self,
        key: str,
        name: str,
        read: JSONObject,
        options: DeleteOptions,
        validate_deletion: ValidateDeletion | None,
    ) -> StoredObject | None:
        """Upstream's ``Store.Delete`` decides on the object its ``Get`` read from etcd,
        then deletes from the watch cache's copy, guarded by etcd's compare-and-swap: one
        etcd read. When nothing keeps ``read`` (no finalizer, no grace period), it is
        removed here on a precondition of its own uid and resourceVersion — so the
        decision holds only while etcd still has that very version (a cache copy
        behind it is set right by the store's confirming read). None: the object
        changed since it was read, or something keeps it, or a pod is first written
        marked: the caller's optimistic update decides again from the current state."""
        with self._interpret("delete", name):
            if validate_deletion is not None:
                await validate_deletion(read)
            try:
                deletion.mark(self.strategy.deletion, read, options, lifecycle=self.lifecycle)
            except deletion.DeleteNow as now:
                if now.marked is not None:
                    return None
            else:
                return None
            meta = read.get("metadata") or {}
            as_read = Preconditions(meta.get("uid"), str(meta.get("resourceVersion", "")))
            try:
                return await self.rs.store.delete(key, as_read, validate_deletion)
            except serr.PreconditionFailed:
                return None

    async def delete_collection(
        self,
        namespace: str,
        opts: ListOptions,
        *,
        dry_run: bool = False,
        options: DeleteOptions | None = None,
    ) -> tuple[ListResult, builtins.list[StoredObject]]:
        """Delete every object ``opts`` selects (listed from storage as ``opts`` ask),
        each guarded by its UID, as :meth:`delete` with ``options`` does; objects
        deleted or replaced meanwhile are skipped, as upstream's ``DeleteCollection``
        skips NotFound. Returns the listing and the objects as the deletion left them
        (removed ones with their deletion revision, kept ones marked)."""
        listed = await self.list(namespace, opts)
        deleted: builtins.list[StoredObject] = []
        for item in listed.items:
            meta = item.obj.get("metadata") or {}
            item_namespace = str(meta.get("namespace") or namespace)
            uid = Preconditions(uid=meta.get("uid"))
            try:
                stored, _ = await self.delete(
                    item_namespace, str(meta.get("name", "")), uid,
                    dry_run=dry_run, options=options,
                )  # fmt: skip
                deleted.append(stored)
            except apierrors.StatusError as e:
                if e.code in (404, 409):  # deleted or replaced meanwhile: not ours to delete
                    continue
                raise
        if self.hooks is not None:
            ctx = Context(namespace=namespace, dry_run=dry_run)
            for item in deleted:
                if not (item.obj.get("metadata") or {}).get("finalizers"):  # removed
                    await self.hooks.after_delete(ctx, item.obj)
        return listed, deleted
