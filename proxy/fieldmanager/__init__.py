"""Server-side apply and managedFields, shaped like k8s.io/apiserver's
``endpoints/handlers/fieldmanager`` over sigs.k8s.io/structured-merge-diff.

- :mod:`.fieldpath`: paths, sets, the FieldsV1 encoding;
- :mod:`.typed`: schema atoms, the built-in kinds' types and a custom kind's;
- :mod:`.typed_value`: field sets, compare, merge, removal on objects;
- :mod:`.managed_fields`: the ``metadata.managedFields`` encoding;
- :mod:`.field_manager`: :class:`FieldManager` (update and apply).

What the REST handlers call is beside them (``proxy.endpoints.handlers.managed``): it
reads the request. This package reads nothing of the server but the OpenAPI schemas.
"""

from __future__ import annotations

from proxy.fieldmanager.field_manager import ApplyConflict, FieldManager, manager_or_user_agent
from proxy.fieldmanager.typed import custom_type, resolve_type

__all__ = [
    "ApplyConflict",
    "FieldManager",
    "custom_type",
    "manager_or_user_agent",
    "resolve_type",
]
