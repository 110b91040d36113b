"""The strategy every resource starts from (upstream's generic parts of
``rest.BeforeCreate`` / ``BeforeUpdate`` with a kind's ``strategy.go``): ObjectMeta's
system fields (``proxy.registry.object_meta``), then the kind's validation rules
(``proxy.registry.validation``). Kinds with more rules (RBAC escalation, a namespace's
deletion) extend it (``proxy.kube.strategy``); a custom resource uses it as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from proxy.registry import object_meta, validation
from proxy.registry.deletion import NO_RULES, DeletionRules
from proxy.registry.resources import ResourceInfo
from proxy.registry.rest import Context, ResetFields
from proxy.registry.validation.strategy import KindStrategy
from proxy.request.delete_options import DeleteOptions
from storage.interfaces import JSONObject

__all__ = ["GenericStrategy", "StatusStrategy"]


@dataclass(frozen=True)
class GenericStrategy:
    """The strategy of ``resource`` reached through ``subresource`` ("" for the resource
    itself; ``status`` takes only the status, ``finalize`` only ``spec.finalizers``)."""

    resource: ResourceInfo
    subresource: str = ""
    # the kind's own validation (None: ObjectMeta's rules only), given by whoever serves
    # the kind (kube's table, the aggregator's, a CRD's serving object)
    rules: KindStrategy | None = None
    # the kind's defaulting (the object defaulted in place), given by whoever serves the
    # kind (kube's ``proxy.kube.defaulting``); None: objects are stored as decoded
    defaulter: Callable[[JSONObject], object] | None = None
    # whether ``metadata.generation`` is set and bumped on spec changes (every custom
    # resource; only some built-in kinds, as their upstream strategies decide)
    tracks_generation: bool = True
    # what the kind adds to a DELETE (graceful deletion, Terminating, its own
    # finalizers), the same on every subresource's strategy of the kind
    deletion: DeletionRules = NO_RULES

    def checks_required_fields(self) -> bool:
        return self.rules is not None and self.rules.validates_kind

    def checks_types(self) -> bool:
        return self.rules is not None and self.rules.validates_types

    def allow_create_on_update(self) -> bool:
        return self.resource.create_on_update and not self.subresource

    def reset_fields(self) -> ResetFields:
        """A kind with a status subresource: its main resource does not own ``status``,
        ``/status`` does not own ``spec``."""
        if self.subresource == "status":
            return (("spec",),)
        if self.resource.has_status and not self.subresource:
            return (("status",),)
        return ()

    def check_write(self, ctx: Context, obj: JSONObject) -> None:
        pass

    def prepare_for_create(self, ctx: Context, obj: JSONObject) -> JSONObject:
        return object_meta.prepare_for_create(
            obj, self.resource, ctx.namespace, tracked=self.tracks_generation
        )

    def prepare_for_update(self, ctx: Context, new: JSONObject, old: JSONObject) -> JSONObject:
        if self.resource.has_status and not self.subresource:
            object_meta.keep_status(new, old)
        return object_meta.prepare_for_update(new, old, tracked=self.tracks_generation)

    def default(self, obj: JSONObject) -> None:
        """The kind's defaults set in place, as upstream's decoder sets them on every
        body, patch result and webhook answer (the handlers call it right after
        decoding, before mutating admission)."""
        if self.defaulter is not None:
            self.defaulter(obj)

    def validate(self, ctx: Context, obj: JSONObject) -> None:
        validation.validate_create(obj, self.resource, self.rules)

    def validate_update(self, ctx: Context, new: JSONObject, old: JSONObject) -> None:
        validation.validate_update(new, old, self.resource, self.subresource, self.rules)

    def canonicalize(self, obj: JSONObject) -> None:
        pass

    async def before_delete(
        self, ctx: Context, name: str, current: JSONObject | None, options: DeleteOptions
    ) -> None:
        pass


@dataclass(frozen=True)
class StatusStrategy(GenericStrategy):
    """A ``/status`` write (upstream's per-kind ``statusStrategy``): only the status
    changes, everything else stays as stored."""

    def prepare_for_update(self, ctx: Context, new: JSONObject, old: JSONObject) -> JSONObject:
        merged = object_meta.with_parts_of(new, old, object_meta.take_status)
        return object_meta.prepare_for_update(merged, old, tracked=self.tracks_generation)
