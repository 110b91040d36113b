"""Auditing (upstream's ``k8s.io/apiserver/pkg/audit`` and ``plugin/pkg/audit``): a
policy decides each request's level, the filter writes ``audit.k8s.io/v1`` Events at
each stage through a buffered log backend. See ``docs/audit.md``."""
