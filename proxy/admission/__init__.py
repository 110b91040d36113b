"""Admission (k8s.io/apiserver/pkg/admission): the plugins a write passes before storage."""
