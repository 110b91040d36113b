"""What ``k8s.io/apimachinery`` gives every API server, kind-independent: field errors
and name, label and ObjectMeta validation (``validation``), resource quantities
(``quantity``). Imports nothing of ``proxy`` but ``apierrors``."""
