"""Request-scoped primitives (upstream's ``k8s.io/apiserver/pkg/endpoints/request`` and
the ``metav1`` options): what the filters record on a request and what every later
stage reads — the ``RequestInfo``, the user, audit annotations, ``Warning`` headers —
and the parsed List, Delete and write options (``dryRun``, ``fieldValidation``,
``fieldManager``, ``force``).

A leaf of the server library: it imports nothing of ``proxy`` but ``apierrors`` and
``apimachinery`` (field errors), so authorization, admission, the registry and patching
can all read it without reaching up to the endpoints that fill it in.
"""
