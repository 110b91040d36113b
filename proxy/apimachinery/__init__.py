"""What ``k8s.io/apimachinery`` gives every API server, kind-independent: field errors
and name, label and ObjectMeta validation (``validation``), resource quantities
(``quantity``), what a served resource looks like (``api_resource``, metav1's
APIResource as Protocols), supervised background tasks with backoff (``wait``, after
``wait.BackoffUntil``). Imports nothing of ``proxy`` but ``apierrors``."""
