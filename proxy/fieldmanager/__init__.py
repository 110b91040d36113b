"""Server-side apply and managedFields, shaped like k8s.io/apiserver's
``endpoints/handlers/fieldmanager`` over sigs.k8s.io/structured-merge-diff.

- :mod:`.fieldpath`: paths, sets, the FieldsV1 encoding;
- :mod:`.typed`: schema atoms and the type resolver (:func:`register_schema` for CRDs);
- :mod:`.typed_value`: field sets, compare, merge, removal on objects;
- :mod:`.managed_fields`: the ``metadata.managedFields`` encoding;
- :mod:`.field_manager`: :class:`FieldManager` (update and apply);
- :mod:`.wiring`: what the REST handlers call.
"""

from __future__ import annotations

from proxy.fieldmanager.field_manager import ApplyConflict, FieldManager, manager_or_user_agent
from proxy.fieldmanager.typed import register_schema, resolve_type, unregister_schema

__all__ = [
    "ApplyConflict",
    "FieldManager",
    "manager_or_user_agent",
    "register_schema",
    "resolve_type",
    "unregister_schema",
]
