"""What ``k8s.io/apimachinery`` gives every API server, kind-independent: field errors
and name, label and ObjectMeta validation (``validation``), resource quantities
(``quantity``), supervised background tasks with backoff (``wait``, after
``wait.BackoffUntil``). Imports nothing of ``proxy`` but ``apierrors``."""
