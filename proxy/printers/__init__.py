"""Server-side printing: meta.k8s.io Tables (k8s.io/kubernetes/pkg/printers), the
generic machinery; the built-in kinds' columns are in ``proxy.kube.printers``."""
