"""The bootstrap ensurer (upstream's ``storageversionhook``-style post-start hook
``priority-and-fairness-config-producer``): at start-up, writes the mandatory and
suggested FlowSchemas and PriorityLevelConfigurations.

- a missing object is created (with ``apf.kubernetes.io/autoupdate-spec: "true"``);
- an existing mandatory object, and an existing suggested one whose annotation is
  ``"true"``, gets its spec put back when someone changed it;
- a suggested object whose annotation is anything else is left as the user made it.

Written through the loopback client (validated, admitted, audited as
``system:apiserver``, with managedFields); a failure (etcd down at start) ends the pass
and the hook's supervisor runs it again, so readyz's
``poststarthook/priority-and-fairness-config-producer`` passes once every object is as
wanted.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from proxy.flowcontrol import bootstrap
from proxy.loopback.client import LoopbackClient, Mutate, resource_path

__all__ = ["CONFIG_PRODUCER_HOOK", "GROUP", "ensure_bootstrap_configuration"]

log = logging.getLogger("watchcache.flowcontrol")

GROUP = "flowcontrol.apiserver.k8s.io"
CONFIG_PRODUCER_HOOK = "priority-and-fairness-config-producer"
JSON = dict[str, Any]


def _wanted() -> list[tuple[str, str, str, JSON, bool]]:
    """(plural, kind, name, spec, mandatory) of every bootstrap object, levels first."""
    out = []
    for specs, mandatory in (
        (bootstrap.MANDATORY_PRIORITY_LEVELS, True),
        (bootstrap.SUGGESTED_PRIORITY_LEVELS, False),
    ):
        for name, spec in specs.items():
            out.append(
                ("prioritylevelconfigurations", "PriorityLevelConfiguration", name, spec, mandatory)
            )
    for specs, mandatory in (
        (bootstrap.MANDATORY_FLOW_SCHEMAS, True),
        (bootstrap.SUGGESTED_FLOW_SCHEMAS, False),
    ):
        for name, spec in specs.items():
            out.append(("flowschemas", "FlowSchema", name, spec, mandatory))
    return out


def _reconciler(spec: JSON, mandatory: bool) -> Mutate:
    """Put ``spec`` back on a mandatory object, or a suggested one still auto-updated."""

    def reconcile(current: JSON) -> JSON | None:
        annotations = (current.get("metadata") or {}).get("annotations") or {}
        auto = annotations.get(bootstrap.AUTOUPDATE_ANNOTATION) == "true"
        if current.get("spec") == spec or not (mandatory or auto):
            return None
        log.info("restoring the spec of the bootstrap %s %s", current.get("kind"),
                 current["metadata"]["name"])  # fmt: skip
        current["spec"] = copy.deepcopy(spec)
        meta = current.setdefault("metadata", {})
        meta.setdefault("annotations", {})[bootstrap.AUTOUPDATE_ANNOTATION] = "true"
        return current

    return reconcile


async def ensure_bootstrap_configuration(client: LoopbackClient) -> None:
    """One pass over every bootstrap object (levels first: schemas refer to them); an
    error ends it (the post-start hook's supervisor runs it again)."""
    for plural, kind, name, spec, mandatory in _wanted():
        obj: JSON = {
            "apiVersion": f"{GROUP}/v1",
            "kind": kind,
            "metadata": {"name": name, "annotations": {bootstrap.AUTOUPDATE_ANNOTATION: "true"}},
            "spec": copy.deepcopy(spec),
        }
        await client.ensure(resource_path(GROUP, "v1", plural), obj, _reconciler(spec, mandatory))
