"""Server-side printing: meta.k8s.io Tables (k8s.io/kubernetes/pkg/printers)."""
