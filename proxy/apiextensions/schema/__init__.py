"""The schema side of CustomResourceDefinitions
(``k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation`` and
``pkg/apiserver/schema/{structural,pruning,defaulting,cel}``).

- :func:`validate_crd`: the CRD object itself (names, versions, structural schema,
  extensions, CEL rules), errors with upstream's paths and messages;
- :func:`validate_custom_resource`: a custom resource against a version's schema;
- :func:`prune`: unknown fields removed, their paths returned (``spec.foo``);
- :func:`apply_defaults`: defaults applied, non-nullable nulls dropped.

Errors are :class:`proxy.apimachinery.validation.field.FieldError`; the caller makes one
422 of them with ``field.to_status``. docs/crd-schema.md lists what is covered.
"""

from __future__ import annotations

from proxy.apiextensions.schema.crd_validation import validate_crd
from proxy.apiextensions.schema.defaulting import apply_defaults
from proxy.apiextensions.schema.pruning import prune
from proxy.apiextensions.schema.validation import validate_custom_resource

__all__ = ["apply_defaults", "prune", "validate_crd", "validate_custom_resource"]
