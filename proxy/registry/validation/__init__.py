"""Validation of writes, as kube-apiserver validates before storage.

Two stages, in the order of upstream's write path:

- the request body (``request_body``), under the request's ``fieldValidation`` mode
  (parsed with the other write options in ``proxy.request.write_options``): strict
  decoding (``field_validation``: unknown and duplicate fields), the schema's type
  checks (``schema``);
- the object (``strategy``), after the system fields are set: ``validate_create`` /
  ``validate_update`` run the kind's registered ``strategy.Validate`` /
  ``ValidateUpdate`` (kube's built-in kinds: ``proxy.kube.validation``; APIService:
  ``proxy.aggregator.validation``; CRDs and custom resources: ``proxy.apiextensions``),
  or ObjectMeta alone for a kind without one, and report every violation in one 422
  Invalid built from field errors (``proxy.apimachinery.validation.field``) as
  ``errors.NewInvalid`` builds it.
"""

from __future__ import annotations

from proxy.registry.validation.request_body import validate_patched, validate_written
from proxy.registry.validation.strategy import validate_create, validate_update
from proxy.request.write_options import Mode, field_mode

__all__ = [
    "Mode",
    "field_mode",
    "validate_create",
    "validate_patched",
    "validate_update",
    "validate_written",
]
