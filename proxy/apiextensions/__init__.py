"""CustomResourceDefinitions (``apiextensions.k8s.io/v1``), shaped like
``k8s.io/apiextensions-apiserver``:

- ``crd_strategy``: the CRD's own REST strategy (defaults, status on create, storedVersions,
  the checks serving depends on; the schema rules come from ``schema_hooks``);
- ``custom_resource``: what a CRD version serves (a ``ResourceInfo`` and its
  ``CustomResourceVersion``), the CR strategy (schema validation, pruning, defaulting),
  printer columns and selectable fields;
- ``serving``: the run-time registration of custom resources (registry, storage and watch
  cache, discovery and OpenAPI invalidation);
- ``controllers``: naming, establishing and finalizing, one owned task over the CRD watch;
- ``handler``: what a CR request gets beyond the built-in handlers (415 for strategic
  merge, deprecation warnings, /scale from the CRD's paths, creates refused while the
  CRD terminates);
- ``openapi``: the OpenAPI v3 document of a CR group-version;
- ``conversion`` / ``webhook_converter``: served versions over the storage version;
- ``schema`` (with ``proxy.cel``): structural schemas, CR validation, pruning and
  defaulting, reached only through ``schema_hooks``.
"""
