"""The CustomResourceDefinition's REST strategy (apiextensions-apiserver's
``registry/customresourcedefinition/strategy.go`` and the v1 defaults):

- defaults: ``spec.conversion.strategy: None``, ``names.singular`` (the kind in lower
  case) and ``names.listKind`` (``<Kind>List``), a webhook service's port 443;
- create: status reset to empty accepted names and ``storedVersions`` = the storage
  version; update: the storage version is added to ``storedVersions`` when new;
- validation: ObjectMeta here, every CRD rule (names, versions, structural schemas,
  CEL rules, storedVersions) from ``schema_hooks`` (``proxy.apiextensions.schema``);
- the resource its REST storage serves (``etcd.go``): short names, category, status.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from proxy.apiextensions import schema_hooks
from proxy.apimachinery.validation.field import ErrorList
from proxy.apimachinery.validation.object_meta import validate_object_meta
from proxy.registry.catalogue import catalogued
from proxy.registry.deletion import DeletionRules
from proxy.registry.resources import ResourceInfo
from proxy.registry.validation.strategy import KindStrategy

__all__ = [
    "CLEANUP_FINALIZER",
    "CRD_GROUP",
    "CRD_PLURAL",
    "DELETION",
    "STRATEGY",
    "crd_resource",
    "set_defaults",
]

JSON = dict[str, Any]

CRD_GROUP, CRD_PLURAL = "apiextensions.k8s.io", "customresourcedefinitions"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"

# the CRD's own Delete (apiextensions-apiserver's etcd.go): kept until the finalizing
# controller has removed every instance; its generation is not bumped
DELETION = DeletionRules(finalizers=(CLEANUP_FINALIZER,), bumps_generation=False)


def crd_resource() -> ResourceInfo:
    """customresourcedefinitions as the CRD's REST storage declares them (``ShortNames``,
    ``Categories``; its one subresource, status)."""
    return dataclasses.replace(
        catalogued(CRD_GROUP, "v1", CRD_PLURAL),
        subresources=("status",),
        short_names=("crd", "crds"),
        categories=("api-extensions",),
    )


def set_defaults(crd: JSON) -> None:
    """The v1 defaults (``SetDefaults_CustomResourceDefinition`` and friends)."""
    spec = crd.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    conversion = spec.setdefault("conversion", {})
    if isinstance(conversion, dict):
        conversion.setdefault("strategy", "None")
        webhook = conversion.get("webhook")
        service = ((webhook or {}).get("clientConfig") or {}).get("service")
        if isinstance(service, dict):
            service.setdefault("port", 443)
    names_ = spec.get("names")
    if isinstance(names_, dict) and isinstance(names_.get("kind"), str):
        names_.setdefault("singular", names_["kind"].lower())
        names_.setdefault("listKind", names_["kind"] + "List")


def _storage(crd: JSON) -> str | None:
    for v in (crd.get("spec") or {}).get("versions") or []:
        if isinstance(v, dict) and v.get("storage"):
            return str(v.get("name"))
    return None


def prepare_create(crd: JSON) -> None:
    set_defaults(crd)
    storage = _storage(crd)
    crd["status"] = {
        "acceptedNames": {"plural": "", "kind": ""},
        "storedVersions": [storage] if storage else [],
    }


def prepare_update(new: JSON, old: JSON) -> None:
    set_defaults(new)
    storage = _storage(new)
    status = new.setdefault("status", {})
    stored = status.setdefault("storedVersions", [])
    if storage and storage not in stored:
        stored.append(storage)


# ----------------------------------------------------------------------- validation


def _no_name_rule(name: str, prefix: bool) -> list[str]:
    return []  # the CRD's name rules are the schema package's (with upstream's order)


def validate_crd(crd: JSON, old: JSON | None = None) -> ErrorList:
    """``ValidateCustomResourceDefinition``: ObjectMeta (labels, annotations, ...), then
    every rule of the CRD (names, versions, schemas, ...) from ``schema_hooks``."""
    errs = validate_object_meta(crd.get("metadata") or {}, False, _no_name_rule)
    return errs + schema_hooks.validate_crd(crd, old)


STRATEGY = KindStrategy(
    validate=lambda crd: validate_crd(crd),
    validate_update=validate_crd,
    prepare_create=prepare_create,
    prepare_update=prepare_update,
    core_meta=False,
)
