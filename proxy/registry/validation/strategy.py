"""Which validation each kind gets, and the two entry points the write path calls, in
the order of kube-apiserver's ``rest.BeforeCreate`` / ``rest.BeforeUpdate``:

- :func:`validate_create`: the kind's create preparation (a Job's generated selector),
  the kind's ``strategy.Validate`` (or, for kinds without one, ObjectMeta with the
  kind's name rule), then ObjectMeta with ``ValidatePathSegmentName``;
- :func:`validate_update`: the common fields (ObjectMeta, path-segment name, and the
  metadata update rules), then the kind's ``strategy.ValidateUpdate`` (``/status``
  writes: the metadata update rules, and the kind's status rules where it has them),
  after the kind's update preparation (a Service keeps its allocated clusterIP).

Every violation of one write is reported together in one 422 Invalid
(``errors.NewInvalid``): causes keep duplicates, the message lists each error once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from proxy.apimachinery.validation import field, names
from proxy.apimachinery.validation.field import ErrorList
from proxy.apimachinery.validation.object_meta import (
    validate_object_meta,
    validate_object_meta_update,
)
from proxy.registry.resources import ResourceInfo

__all__ = [
    "KindStrategy",
    "validate_create",
    "validate_update",
]

JSON = dict[str, Any]


@dataclass(frozen=True)
class KindStrategy:
    """A kind's validation: ``validate`` on create, ``validate_update`` on update (None:
    ObjectMeta's rules alone, with the kind's ``name_rule``), and the mutations its REST
    strategy makes first (``prepare_create``/``prepare_update``)."""

    validate: Callable[[JSON], ErrorList] | None = None
    validate_update: Callable[[JSON, JSON], ErrorList] | None = None
    prepare_create: Callable[[JSON], None] | None = None
    prepare_update: Callable[[JSON, JSON], None] | None = None
    # the ``/status`` writes' own rules (``ValidateXStatusUpdate``), where a kind has them
    validate_status_update: Callable[[JSON, JSON], ErrorList] | None = None
    # the strategy reports wrong JSON types itself, with its other errors (a custom
    # resource's schema validation: upstream's unstructured decoding checks no types)
    validates_types: bool = False
    # the name rule of a kind validated by ObjectMeta's rules alone (most upstream
    # strategies' ``ValidateObjectMeta`` with a DNS subdomain name)
    name_rule: names.NameFunc = names.name_is_dns_subdomain
    # ObjectMeta validated with k8s.io/kubernetes' core rules (a finalizer name needs a
    # "/") beside apimachinery's; False for kinds served outside it (apiextensions, the
    # aggregator: a CRD's customresourcecleanup finalizer has no "/")
    core_meta: bool = True

    @property
    def validates_kind(self) -> bool:
        """Whether the kind has rules of its own beyond ObjectMeta's."""
        return self.validate is not None


# a kind nobody gave a strategy: ObjectMeta's rules alone
_OBJECT_META_ONLY = KindStrategy()


def _metadata(obj: JSON) -> JSON:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _name(obj: JSON) -> str:
    return str(_metadata(obj).get("name") or "")


def _raise_if(errs: ErrorList, resource: ResourceInfo, obj: JSON) -> None:
    if errs:
        raise field.to_status(resource.group_kind, _name(obj), errs)


def validate_create(obj: JSON, resource: ResourceInfo, strategy: KindStrategy | None) -> None:
    """Validate a new object (system fields already set) by the kind's ``strategy``
    (None: ObjectMeta's rules only); may mutate it as the kind's strategy does. Raises a
    422 ``StatusError`` naming every violation."""
    rules = strategy or _OBJECT_META_ONLY
    if rules.prepare_create is not None:
        rules.prepare_create(obj)
    if rules.validate is not None:
        errs = rules.validate(obj)
    else:
        meta, namespaced = _metadata(obj), resource.namespaced
        errs = validate_object_meta(meta, namespaced, rules.name_rule, core=rules.core_meta)
    _raise_if(errs, resource, obj)
    path_errs = validate_object_meta(
        _metadata(obj), resource.namespaced, names.path_segment_name, core=False
    )
    _raise_if(path_errs, resource, obj)


def validate_update(
    new: JSON, old: JSON, resource: ResourceInfo, subresource: str, strategy: KindStrategy | None
) -> None:
    """Validate ``new`` replacing the stored ``old`` (after the update's system-field
    merge) by the kind's ``strategy``; may mutate ``new`` as the kind's strategy does.
    Raises a 422 StatusError."""
    rules = strategy or _OBJECT_META_ONLY
    if rules.prepare_update is not None and not subresource:
        rules.prepare_update(new, old)
    new_meta, old_meta = _metadata(new), _metadata(old)
    errs = validate_object_meta(new_meta, resource.namespaced, names.path_segment_name, core=False)
    errs += validate_object_meta_update(new_meta, old_meta, core=False)
    if rules.validate_update is None or subresource:
        errs += validate_object_meta_update(new_meta, old_meta, core=rules.core_meta)
        if subresource == "status" and rules.validate_status_update is not None:
            errs += rules.validate_status_update(new, old)
    else:
        errs += rules.validate_update(new, old)
    _raise_if(errs, resource, new)
