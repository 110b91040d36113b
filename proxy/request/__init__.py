"""Request-scoped primitives (upstream's ``k8s.io/apiserver/pkg/endpoints/request`` and
the ``metav1`` options): what the filters record on a request and what every later
stage reads — the ``RequestInfo``, the user, audit annotations, ``Warning`` headers —
and the parsed List/Delete options and ``dryRun``.

A leaf of the server library: it imports nothing of ``proxy`` but ``apierrors``, so
authorization, admission, the registry and patching can all read it without reaching
up to the endpoints that fill it in.
"""
