"""Column handlers of the ``apps`` group: deployments, replicasets, statefulsets,
daemonsets (kubectl's ``printDeployment``, ``printReplicaSet``, ...).
"""

from __future__ import annotations

import datetime as dt

from proxy.printers.columns import (
    AGE,
    JSON,
    NAME,
    TEMPLATE_COLUMNS,
    Column,
    Row,
    TablePrinter,
    as_int,
    format_label_selector,
    format_labels,
    lookup,
    name_age,
    template_columns,
    template_wide,
)

__all__ = ["HANDLERS"]

APPS = "io.k8s.api.apps.v1."
CORE = "io.k8s.api.core.v1."
DEPLOYMENT_COLUMNS = (
    NAME,
    Column("Ready", description="Number of the pod with ready state"),
    Column("Up-to-date", doc=APPS + "DeploymentStatus.updatedReplicas"),
    Column("Available", doc=APPS + "DeploymentStatus.availableReplicas"),
    AGE,
    *template_columns(APPS + "DeploymentSpec.selector"),
)


def print_deployment(d: dict[str, JSON], now: dt.datetime) -> Row:
    desired = as_int(lookup(d, "spec", "replicas"))
    ready = as_int(lookup(d, "status", "readyReplicas"))
    name, age = name_age(d, now)
    cells: list[JSON] = [
        name,
        f"{ready}/{desired}",
        as_int(lookup(d, "status", "updatedReplicas")),
        as_int(lookup(d, "status", "availableReplicas")),
        age,
        *template_wide(d, format_label_selector(lookup(d, "spec", "selector"))),
    ]
    return cells, []


REPLICASET_COLUMNS = (
    NAME,
    Column("Desired", type="integer", doc=APPS + "ReplicaSetSpec.replicas"),
    Column("Current", type="integer", doc=APPS + "ReplicaSetStatus.replicas"),
    Column("Ready", type="integer", doc=APPS + "ReplicaSetStatus.readyReplicas"),
    AGE,
    *template_columns(APPS + "ReplicaSetSpec.selector"),
)


def print_replicaset(rs: dict[str, JSON], now: dt.datetime) -> Row:
    name, age = name_age(rs, now)
    cells: list[JSON] = [
        name,
        as_int(lookup(rs, "spec", "replicas")),
        as_int(lookup(rs, "status", "replicas")),
        as_int(lookup(rs, "status", "readyReplicas")),
        age,
        *template_wide(rs, format_label_selector(lookup(rs, "spec", "selector"))),
    ]
    return cells, []


STATEFULSET_COLUMNS = (
    NAME,
    Column("Ready", description="Number of the pod with ready state"),
    AGE,
    *TEMPLATE_COLUMNS,
)


def print_statefulset(sts: dict[str, JSON], now: dt.datetime) -> Row:
    ready = as_int(lookup(sts, "status", "readyReplicas"))
    desired = as_int(lookup(sts, "spec", "replicas"))
    name, age = name_age(sts, now)
    return [name, f"{ready}/{desired}", age, *template_wide(sts, "")[:2]], []


DAEMONSET_COLUMNS = (
    NAME,
    Column("Desired", type="integer", doc=APPS + "DaemonSetStatus.desiredNumberScheduled"),
    Column("Current", type="integer", doc=APPS + "DaemonSetStatus.currentNumberScheduled"),
    Column("Ready", type="integer", doc=APPS + "DaemonSetStatus.numberReady"),
    Column("Up-to-date", type="integer", doc=APPS + "DaemonSetStatus.updatedNumberScheduled"),
    Column("Available", type="integer", doc=APPS + "DaemonSetStatus.numberAvailable"),
    Column("Node Selector", doc=CORE + "PodSpec.nodeSelector"),
    AGE,
    *template_columns(APPS + "DaemonSetSpec.selector"),
)


def print_daemonset(ds: dict[str, JSON], now: dt.datetime) -> Row:
    status = ds.get("status") or {}
    name, age = name_age(ds, now)
    node_selector = format_labels(lookup(ds, "spec", "template", "spec", "nodeSelector"))
    selector = format_label_selector(lookup(ds, "spec", "selector")) or "<none>"
    cells: list[JSON] = [
        name,
        as_int(status.get("desiredNumberScheduled")),
        as_int(status.get("currentNumberScheduled")),
        as_int(status.get("numberReady")),
        as_int(status.get("updatedNumberScheduled")),
        as_int(status.get("numberAvailable")),
        node_selector,
        age,
        *template_wide(ds, selector),
    ]
    return cells, []


# kubectl's handlers for the apps group, by resource
HANDLERS: dict[str, TablePrinter] = {
    "deployments": TablePrinter(DEPLOYMENT_COLUMNS, print_deployment),
    "replicasets": TablePrinter(REPLICASET_COLUMNS, print_replicaset),
    "statefulsets": TablePrinter(STATEFULSET_COLUMNS, print_statefulset),
    "daemonsets": TablePrinter(DAEMONSET_COLUMNS, print_daemonset),
}
