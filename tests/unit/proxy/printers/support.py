"""What the printers' tests share: a fixed ``now``, times before it, a pod, one row's cells."""

from __future__ import annotations

import datetime as dt
from typing import Any

from proxy.aggregator import printers as apiservice_printers
from proxy.kube.printers import register_builtin_printers
from proxy.printers.handlers import register_printers
from proxy.printers.table import to_table
from tests.unit.proxy.resources import Res


def register_all_printers() -> None:
    """The built-in kinds' and APIService's columns, as the composition root registers
    them (the Tables these tests read are of built-in kinds)."""
    register_builtin_printers()
    register_printers("apiregistration.k8s.io", apiservice_printers.HANDLERS)


NOW = dt.datetime(2026, 1, 10, 12, 0, 0, tzinfo=dt.UTC)


def ago(**kw: float) -> str:
    return (NOW - dt.timedelta(**kw)).strftime("%Y-%m-%dT%H:%M:%SZ")


PODS = Res("", "v1", "Pod", "pods")


def cells(res: Res, obj: dict[str, Any]) -> list[Any]:
    table = to_table(res, [obj], include_object="None", now=NOW)
    row: list[Any] = table["rows"][0]["cells"]
    return row


def columns(res: Res) -> list[str]:
    """The names of ``res``'s Table columns."""
    table = to_table(res, [], include_object="None", now=NOW)
    return [str(c["name"]) for c in table["columnDefinitions"]]


def pod(**status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "creationTimestamp": ago(minutes=5), "resourceVersion": "7"},
        "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
        "status": status,
    }


RUNNING = {"running": {"startedAt": ago(minutes=4)}}


TEMPLATE = {"spec": {"containers": [{"name": "c", "image": "img"}]}}
