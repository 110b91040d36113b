"""Column handlers of the ``rbac.authorization.k8s.io`` group: roles, clusterroles and
their bindings (kubectl's ``printRole``, ``printRoleBinding``, ...).
"""

from __future__ import annotations

import datetime as dt

from proxy.printers.columns import (
    AGE,
    CREATED_AT,
    JSON,
    NAME,
    Column,
    Row,
    TablePrinter,
    as_list,
    lookup,
    name_age,
    object_meta,
)
from proxy.printers.duration import parse_time

__all__ = ["HANDLERS"]

ROLE_COLUMNS = (NAME, CREATED_AT)


def _created_at(obj: dict[str, JSON]) -> str:
    when = parse_time(object_meta(obj).get("creationTimestamp"))
    return "" if when is None else when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def print_role(role: dict[str, JSON], now: dt.datetime) -> Row:
    return [str(object_meta(role).get("name", "")), _created_at(role)], []


RBAC = "io.k8s.api.rbac.v1."
ROLEBINDING_COLUMNS = (
    NAME,
    Column("Role", doc=RBAC + "RoleBinding.roleRef"),
    AGE,
    Column("Users", priority=1, description="Users in the roleBinding"),
    Column("Groups", priority=1, description="Groups in the roleBinding"),
    Column("ServiceAccounts", priority=1, description="ServiceAccounts in the roleBinding"),
)


def print_rolebinding(rb: dict[str, JSON], now: dt.datetime) -> Row:
    users, groups, sas = [], [], []
    for subject in as_list(rb.get("subjects")):
        kind, sname = subject.get("kind"), str(subject.get("name", ""))
        if kind == "User":
            users.append(sname)
        elif kind == "Group":
            groups.append(sname)
        elif kind == "ServiceAccount":
            sas.append(f"{subject.get('namespace', '')}/{sname}")
    role = f"{lookup(rb, 'roleRef', 'kind') or ''}/{lookup(rb, 'roleRef', 'name') or ''}"
    name, age = name_age(rb, now)
    return [name, role, age, ", ".join(users), ", ".join(groups), ", ".join(sas)], []


# kubectl's handlers for the rbac.authorization.k8s.io group, by resource
HANDLERS: dict[str, TablePrinter] = {
    "roles": TablePrinter(ROLE_COLUMNS, print_role),
    "clusterroles": TablePrinter(ROLE_COLUMNS, print_role),
    "rolebindings": TablePrinter(ROLEBINDING_COLUMNS, print_rolebinding),
    "clusterrolebindings": TablePrinter(ROLEBINDING_COLUMNS, print_rolebinding),
}
