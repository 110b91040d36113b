"""The field manager: who owns which field of an object, updated on every write and
enforced on apply, as k8s.io/apiserver's ``endpoints/handlers/fieldmanager`` (the
chain of managers upstream builds in ``NewDefaultFieldManager``, flattened here):

- :meth:`FieldManager.update` (create, update, non-apply patch): the fields the write
  changed (upstream's ``Compare`` of the live and new objects, both in the shape a Go
  typed round trip gives them) go to the manager's ``Update`` entry; other managers
  lose the fields it changed or removed. The managedFields the write sends replace the
  live ones when they decode, ``[]``/``[{}]`` reset them (and an object without any is
  not tracked by updates, as upstream's ``skipNonAppliedManager``), garbage keeps the
  live ones; writes through a subresource never set them.
- :meth:`FieldManager.apply` (``application/apply-patch+yaml``): the configuration is
  merged onto the live object; fields the applier owned and no longer sends are
  removed unless another manager owns them; changing a field another manager owns is
  a conflict (409) unless ``force``, which takes it over; sending the value already
  there shares ownership. ``kubectl`` (the manager ``kubectl apply --server-side``
  uses) may take over what its ``last-applied-configuration`` annotation lists and
  keeps that annotation in sync (upstream's CSA→SSA upgrade).

Times are set to now for the manager whose write changed something; Update entries
beyond :data:`~proxy.fieldmanager.managed_fields.DEFAULT_MAX_UPDATE_MANAGERS` are
merged into ``ancient-changes``. The paths upstream strips (apiVersion, kind, and
the server's metadata) are never owned.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import orjson

from proxy import apierrors
from proxy.fieldmanager import managed_fields as mf
from proxy.fieldmanager import typed_value as tv
from proxy.fieldmanager.fieldpath import Path, PathElement, Set, path_string
from proxy.fieldmanager.managed_fields import Managed, VersionedSet
from proxy.fieldmanager.typed import Atom, resolve_type
from storage.interfaces import JSONObject

__all__ = ["LAST_APPLIED", "ApplyConflict", "FieldManager", "manager_or_user_agent"]

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
CSA_UPGRADE_MANAGER = "kubectl"
FIELD_MANAGER_MAX_LENGTH = 128
_CURRENT = "current-operation"


def manager_or_user_agent(field_manager: str, user_agent: str) -> str:
    """The manager of a write: ``fieldManager``, else the User-Agent up to its first
    ``/``, printable characters only, at most 128 bytes (upstream's ``prefixFromUserAgent``)."""
    if field_manager:
        return field_manager
    out = ""
    for char in user_agent.split("/")[0]:
        if not char.isprintable():
            continue
        if len((out + char).encode()) > FIELD_MANAGER_MAX_LENGTH:
            break
        out += char
    return out


def _f(*names: str) -> Path:
    return tuple(PathElement.field(n) for n in names)


_META = ("name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName",
         "generation", "managedFields", "resourceVersion")  # fmt: skip
STRIPPED = Set.of(_f("apiVersion"), _f("kind"), _f("metadata"), *(_f("metadata", m) for m in _META))


class ApplyConflict(Exception):
    """Fields of other managers an apply would change: (manager identifier, path)."""

    def __init__(self, conflicts: list[tuple[str, Path]]) -> None:
        super().__init__(f"{len(conflicts)} conflicts")
        self.conflicts = conflicts

    def status_error(self) -> apierrors.StatusError:
        """409 Conflict as upstream's ``NewConflictError``."""
        causes = [
            {"reason": "FieldManagerConflict", "message": f"conflict with {_print_manager(m)}",
             "field": path_string(p)}
            for m, p in self.conflicts
        ]  # fmt: skip
        details: JSONObject = {"causes": causes}
        body = apierrors.status_body(409, "Conflict", self.message(), details)
        return apierrors.StatusError(body)

    def message(self) -> str:
        if len(self.conflicts) == 1:
            manager, path = self.conflicts[0]
            return (
                f"Apply failed with 1 conflict: conflict with {_print_manager(manager)}: "
                f"{path_string(path)}"
            )
        lines: list[str] = []
        for manager in sorted({m for m, _ in self.conflicts}):
            lines.append(f"conflicts with {_print_manager(manager)}:")
            lines.extend(f"- {path_string(p)}" for m, p in self.conflicts if m == manager)
        return f"Apply failed with {len(self.conflicts)} conflicts: " + "\n".join(lines)


def _go_quote(text: str) -> str:
    return orjson.dumps(text).decode()


def _print_manager(ident: str) -> str:
    info = mf.parse_identifier(ident)
    out = _go_quote(info.get("manager", ""))
    if info.get("subresource"):
        out += f" with subresource {_go_quote(info['subresource'])}"
    if info.get("operation") == mf.UPDATE:
        out += f" using {info.get('apiVersion', '')}"
    return out


def _without_managed_fields(obj: JSONObject) -> JSONObject:
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    return obj


class FieldManager:
    """The field manager of one kind, as served at one (sub)resource."""

    def __init__(
        self,
        group: str,
        version: str,
        kind: str,
        subresource: str = "",
        reset_fields: Set | None = None,
        clock: Callable[[], datetime.datetime] | None = None,
        max_update_managers: int = mf.DEFAULT_MAX_UPDATE_MANAGERS,
        atom: Atom | None = None,
    ) -> None:
        """``atom``: the kind's type (a custom kind's, from its served version); a
        built-in kind's is resolved from its schema."""
        self.group, self.version, self.kind = group, version, kind
        self.api_version = f"{group}/{version}" if group else version
        self.subresource = subresource
        self.atom = atom if atom is not None else resolve_type(group, version, kind)
        self.ignored = reset_fields or Set()
        self.clock = clock
        self.max_update_managers = max_update_managers

    # --- update ---------------------------------------------------------------------

    def update(
        self, live: JSONObject | None, new: JSONObject, manager: str, sent: Any = None
    ) -> list[dict[str, Any]] | None:
        """The managedFields of ``new`` written by ``manager`` over ``live`` (None for
        a create); ``sent`` is the managedFields the request carried. None means the
        object carries no managedFields (upstream's ``UpdateNoErrors`` clears them
        on any error)."""
        try:
            managed = self._decode_live_or_new(live, sent)
            if not managed.fields and live is not None:
                return None  # not tracked: the object has no managed fields
            ident = mf.identifier(manager, mf.UPDATE, self.api_version, self.subresource)
            self._update(live, new, managed, ident)
            mf.cap_update_managers(managed, self.max_update_managers)
            return mf.encode(managed) or None
        except (tv.TypedError, ValueError):
            return None

    def _decode_live_or_new(self, live: JSONObject | None, sent: Any) -> Managed:
        live_entries = ((live or {}).get("metadata") or {}).get("managedFields")
        if self.subresource:
            return _decode_or_empty(live_entries)
        if mf.is_reset(sent):
            return Managed()
        try:
            managed = mf.decode(sent)
        except ValueError:
            managed = Managed()
        return managed if managed.fields else _decode_or_empty(live_entries)

    def _update(
        self, live: JSONObject | None, new: JSONObject, managed: Managed, ident: str
    ) -> None:
        before = _without_managed_fields(live or {})
        comparison = self._compare(before, _without_managed_fields(new))
        self._take_from_others(managed, comparison, _CURRENT, force=True)
        changed = comparison.changed().difference(STRIPPED)
        if changed.empty():
            return
        previous = managed.fields.get(ident)
        owned = changed if previous is None else previous.set.union(changed)
        managed.fields[ident] = VersionedSet(owned, self.api_version, False)
        managed.times[ident] = mf.rfc3339(self.clock)

    def _compare(self, before: Any, after: Any) -> tv.Comparison:
        c = tv.compare(before, after, self.atom)
        if not self.ignored.empty():
            c.added = c.added.recursive_difference(self.ignored)
            c.modified = c.modified.recursive_difference(self.ignored)
            c.removed = c.removed.recursive_difference(self.ignored)
        return c

    def _take_from_others(
        self, managed: Managed, comparison: tv.Comparison, ident: str, force: bool
    ) -> None:
        """Upstream's ``Updater.update``: other managers lose what changed (a conflict
        unless ``force``) and what was removed."""
        changed = comparison.changed()
        conflicts: list[tuple[str, Path]] = []
        for other, vs in list(managed.fields.items()):
            if other == ident:
                continue
            taken = vs.set.intersection(changed)
            if not taken.empty():
                conflicts.extend((other, p) for p in taken.paths())
            remaining = vs.set.difference(taken).difference(comparison.removed)
            managed.fields[other] = VersionedSet(remaining, vs.api_version, vs.applied)
        if conflicts and not force:
            raise ApplyConflict(sorted(conflicts, key=lambda c: (c[0], _path_order(c[1]))))
        for other in [m for m, vs in managed.fields.items() if vs.set.empty()]:
            del managed.fields[other]
            managed.times.pop(other, None)

    # --- apply ----------------------------------------------------------------------

    def apply(
        self, live: JSONObject | None, config: JSONObject, manager: str, force: bool
    ) -> JSONObject:
        """The object after ``manager`` applies ``config`` onto ``live`` (None: absent),
        with its managedFields. Raises Status errors: 400 for a configuration of
        another kind or carrying managedFields, 500 for one that does not fit the
        schema (upstream's wording), 409 for conflicts."""
        self._check_config(config)
        live_obj = live or {}
        try:
            managed = mf.decode((live_obj.get("metadata") or {}).get("managedFields"))
        except ValueError as e:
            raise apierrors.unknown_error(f"failed to decode managed fields: {e}") from None
        ident = mf.identifier(manager, mf.APPLY, self.api_version, self.subresource)
        try:
            applied = tv.to_field_set(config, self.atom, strict=True)
        except tv.TypedError as e:
            raise apierrors.unknown_error(
                f"failed to create typed patch object ({self._gvknn(config)}): {e}"
            ) from None
        try:
            result = self._apply(live_obj, config, managed, ident, applied, force)
        except ApplyConflict as conflict:
            if manager != CSA_UPGRADE_MANAGER or not self._csa_allows(live_obj, conflict):
                raise conflict.status_error() from None
            managed = mf.decode((live_obj.get("metadata") or {}).get("managedFields"))
            result = self._apply(live_obj, config, managed, ident, applied, True)
        except tv.TypedError as e:
            raise apierrors.unknown_error(
                f"failed to create typed live object ({self._gvknn(live_obj)}): {e}"
            ) from None
        if manager == CSA_UPGRADE_MANAGER:
            _sync_last_applied(result, config)
        return result

    def _apply(
        self, live: JSONObject, config: JSONObject, managed: Managed, ident: str,
        applied: Set, force: bool,
    ) -> JSONObject:  # fmt: skip
        base = _without_managed_fields(live)
        merged = tv.merge(base, config, self.atom)
        last = managed.fields.get(ident)
        owned = applied.recursive_difference(self.ignored).difference(STRIPPED)
        managed.fields[ident] = VersionedSet(owned, self.api_version, True)
        if last is not None and not last.set.empty():
            merged = self._prune(merged, managed, last.set)
        comparison = self._compare(base, merged)
        self._take_from_others(managed, comparison, ident, force)
        # an applier left owning nothing has already been dropped with the others
        if ident in managed.fields and managed.fields[ident].set.empty():
            del managed.fields[ident]
        if merged != base:
            managed.times[ident] = mf.rfc3339(self.clock)
        mf.cap_update_managers(managed, self.max_update_managers)
        entries = mf.encode(managed)
        meta = dict(merged.get("metadata") or {})
        meta.pop("managedFields", None)
        if entries:
            meta["managedFields"] = entries
        merged["metadata"] = meta
        result: JSONObject = merged
        return result

    def _prune(self, merged: JSONObject, managed: Managed, last: Set) -> JSONObject:
        """Remove what the applier owned last time, no longer sends, and nobody else
        owns (upstream's ``prune`` with its add-backs)."""
        atom = self.atom
        owned_by_any = Set()
        for vs in managed.fields.values():
            owned_by_any = owned_by_any.union(vs.set)
        last_set = tv.ensure_named_fields_are_members(last, atom)
        keep = tv.ensure_named_fields_are_members(owned_by_any, atom)
        # (merged ∩ last) - keep is merged ∩ (last - keep): a re-apply that still sends
        # all it sent before leaves nothing to remove, and the merged object's own set
        # (a walk of the whole object) is not needed
        candidates = last_set.difference(keep)
        if candidates.empty():
            return merged
        merged_set = tv.ensure_named_fields_are_members(tv.to_field_set(merged, atom), atom)
        pruned = tv.remove_items(merged, merged_set.intersection(candidates), atom)
        return pruned if isinstance(pruned, dict) else merged

    def _check_config(self, config: JSONObject) -> None:
        api_version = str(config.get("apiVersion") or "")
        group, _, version = api_version.rpartition("/")
        kind = str(config.get("kind") or "")
        if (group, version, kind) != (self.group, self.version, self.kind):
            raise apierrors.bad_request(f"invalid object type: {group}/{version}, Kind={kind}")
        meta = config.get("metadata")
        if isinstance(meta, dict) and meta.get("managedFields", None) is not None:
            raise apierrors.bad_request("metadata.managedFields must be nil")

    def _gvknn(self, obj: JSONObject) -> str:
        meta = obj.get("metadata") or {}
        return (
            f"{meta.get('namespace') or ''}/{meta.get('name') or ''}; "
            f"{self.group}/{self.version}, Kind={self.kind}"
        )

    def _csa_allows(self, live: JSONObject, conflict: ApplyConflict) -> bool:
        """Whether every conflict is a field the client-side apply annotation lists with
        the value the object still has (upstream's ``lastAppliedManager``: kubectl's
        CSA→SSA upgrade)."""
        annotations = (live.get("metadata") or {}).get("annotations") or {}
        text = annotations.get(LAST_APPLIED) if isinstance(annotations, dict) else None
        if not text:
            return False
        try:
            last_applied = orjson.loads(text)
            listed = tv.to_field_set(last_applied, self.atom)
            # what the live object no longer holds as last applied is not kubectl's
            drift = tv.compare(last_applied, _without_managed_fields(live), self.atom)
        except (orjson.JSONDecodeError, tv.TypedError):
            return False
        allowed = listed.difference(drift.modified).difference(drift.added)
        allowed = allowed.difference(drift.removed)
        return all(allowed.has(path) for _, path in conflict.conflicts)


def _path_order(path: Path) -> tuple[Any, ...]:
    return tuple(pe.order() for pe in path)


def _decode_or_empty(entries: Any) -> Managed:
    try:
        return mf.decode(entries)
    except ValueError:
        return Managed()


def go_json(value: Any) -> str:
    """Go's ``json.Marshal`` of decoded JSON: sorted keys, HTML characters escaped."""
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _sync_last_applied(result: JSONObject, config: JSONObject) -> None:
    """kubectl's server-side apply keeps an existing last-applied annotation current
    (upstream's ``lastAppliedUpdater``): the configuration without the annotation."""
    meta = result.get("metadata")
    if not isinstance(meta, dict):
        return
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict) or LAST_APPLIED not in annotations:
        return
    cfg_meta = dict(config.get("metadata") or {})
    cfg_annotations = {
        k: v for k, v in (cfg_meta.get("annotations") or {}).items() if k != LAST_APPLIED
    }
    if cfg_annotations:
        cfg_meta["annotations"] = cfg_annotations
    else:
        cfg_meta.pop("annotations", None)
    annotations = dict(annotations)
    # (upstream encodes it with a JSON encoder: a trailing newline)
    annotations[LAST_APPLIED] = go_json({**config, "metadata": cfg_meta}) + "\n"
    result["metadata"] = {**meta, "annotations": annotations}
