"""An example Kopf operator, run unchanged against the lab by tests/e2e/test_kopf.py.

It keeps two annotations current, which exercises Kopf's LIST + WATCH of a built-in
resource, its diff bases and its PATCHes:

- on every ConfigMap labelled ``kopf-example=yes``: ``lab.watchcache.io/keys``, the number
  of keys in ``data`` (on create and on update);
- on every Deployment labelled ``kopf-example=yes``: ``lab.watchcache.io/available``,
  its ``status.availableReplicas`` as the simulated Deployment controller reports it.
"""

from __future__ import annotations

from typing import Any

import kopf

LABELS = {"kopf-example": "yes"}
PREFIX = "lab.watchcache.io"


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=PREFIX)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=PREFIX)
    settings.watching.server_timeout = 60


@kopf.on.create("configmaps", labels=LABELS)
@kopf.on.update("configmaps", labels=LABELS)
def count_keys(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    keys = len(body.get("data") or {})
    patch.setdefault("metadata", {}).setdefault("annotations", {})[f"{PREFIX}/keys"] = str(keys)


@kopf.on.field("apps", "v1", "deployments", field="status.availableReplicas", labels=LABELS)
def report_available(new: Any, patch: kopf.Patch, **_: Any) -> None:
    annotations = patch.setdefault("metadata", {}).setdefault("annotations", {})
    annotations[f"{PREFIX}/available"] = str(new or 0)
