"""Kubernetes' built-in kinds (as k8s.io/kubernetes/pkg): their strategies, defaulting,
validation, printers, subresource storages and bootstrap objects."""
