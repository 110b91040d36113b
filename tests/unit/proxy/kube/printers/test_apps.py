"""apps group rows: deployments, replicasets, statefulsets, daemonsets."""

from __future__ import annotations

from tests.unit.proxy.printers.support import TEMPLATE, ago, cells
from tests.unit.proxy.resources import Res


def test_deployment_and_replicaset_rows() -> None:
    spec = {
        "replicas": 3,
        "selector": {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}],
        },
        "template": {
            "spec": {"containers": [{"name": "a", "image": "i:1"}, {"name": "b", "image": "j"}]}
        },
    }
    deploy = {
        "metadata": {"name": "d", "creationTimestamp": ago(minutes=90)},
        "spec": spec,
        "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2, "replicas": 3},
    }
    assert cells(Res("apps", "v1", "Deployment", "deployments"), deploy) == [
        "d", "2/3", 3, 2, "90m", "a,b", "i:1,j", "app=web,tier in (a,b)",
    ]  # fmt: skip
    assert cells(Res("apps", "v1", "ReplicaSet", "replicasets"), deploy) == [
        "d", 3, 3, 2, "90m", "a,b", "i:1,j", "app=web,tier in (a,b)",
    ]  # fmt: skip


def test_statefulset_and_daemonset_rows() -> None:
    sts = {
        "metadata": {"name": "db", "creationTimestamp": ago(hours=2)},
        "spec": {"replicas": 3, "template": TEMPLATE},
        "status": {"readyReplicas": 1},
    }
    assert cells(Res("apps", "v1", "StatefulSet", "statefulsets"), sts) == [
        "db", "1/3", "120m", "c", "img",
    ]  # fmt: skip
    ds = {
        "metadata": {"name": "agent"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {"spec": {**TEMPLATE["spec"], "nodeSelector": {"os": "linux"}}},
        },
        "status": {
            "desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2,
            "updatedNumberScheduled": 3, "numberAvailable": 2,
        },
    }  # fmt: skip
    assert cells(Res("apps", "v1", "DaemonSet", "daemonsets"), ds) == [
        "agent", 3, 3, 2, 3, 2, "os=linux", "<unknown>", "c", "img", "app=agent",
    ]  # fmt: skip
