"""The checks a DELETE makes on the stored object before it deletes it, after
kube-apiserver's ``rest.BeforeDelete`` (``k8s.io/apiserver/pkg/registry/rest/delete.go``).

Upstream checks the DeleteOptions' preconditions there, against the object it has just
read, and answers a mismatch with a 409 Conflict on the *kind*::

    Operation cannot be fulfilled on Pod "p3": the UID in the precondition (a) does not
    match the UID in record (b). The object might have been deleted and then recreated

(``the ResourceVersion in the precondition ... The object might have been modified`` for
a resourceVersion). The storage's own precondition check (``Precondition failed: ...``)
only fires upstream when the object changes between the two reads; here the check runs
inside the storage's guarded delete loop, on the state the delete is guarded by, so it
is the one a client meets.
"""

from __future__ import annotations

from proxy import apierrors
from proxy.registry.resources import ResourceInfo
from storage.interfaces import JSONObject, Preconditions, ValidateDeletion

__all__ = ["check_preconditions", "validate_deletion"]


def check_preconditions(
    resource: ResourceInfo, preconditions: Preconditions | None, current: JSONObject
) -> None:
    """409 (``apierrors.precondition_conflict``) when ``preconditions`` do not hold for
    ``current``, the stored object; the UID is checked before the resourceVersion."""
    if preconditions is None:
        return
    meta = current.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    name = str(meta.get("name", ""))
    checks = (("UID", preconditions.uid, "uid"),
              ("ResourceVersion", preconditions.resource_version, "resourceVersion"))  # fmt: skip
    for field, wanted, key in checks:
        actual = str(meta.get(key) or "")
        if wanted is not None and wanted != actual:
            raise apierrors.precondition_conflict(resource.group_kind, name, field, wanted, actual)


def validate_deletion(
    resource: ResourceInfo, preconditions: Preconditions | None
) -> ValidateDeletion:
    """A storage ``validate_deletion`` callback that runs ``check_preconditions``."""

    async def validate(current: JSONObject) -> None:
        check_preconditions(resource, preconditions, current)

    return validate
