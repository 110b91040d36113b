"""Core group rows and columns (printers_test.go cases): pods, nodes, namespaces, configmaps,
secrets, services, events, serviceaccounts."""

from __future__ import annotations

from proxy.printers.table import to_table
from tests.unit.proxy.printers.support import NOW, PODS, RUNNING, ago, cells, pod
from tests.unit.proxy.resources import Res


def test_pod_columns_are_kubectls() -> None:
    table = to_table(PODS, [pod()], now=NOW)
    cols = [(c["name"], c["type"], c["format"], c["priority"]) for c in table["columnDefinitions"]]
    assert cols == [
        ("Name", "string", "name", 0),
        ("Ready", "string", "", 0),
        ("Status", "string", "", 0),
        ("Restarts", "string", "", 0),
        ("Age", "string", "", 0),
        ("IP", "string", "", 1),
        ("Node", "string", "", 1),
        ("Nominated Node", "string", "", 1),
        ("Readiness Gates", "string", "", 1),
    ]
    name_doc = table["columnDefinitions"][0]["description"]
    assert name_doc.startswith("Name must be unique within a namespace.")
    assert table["columnDefinitions"][5]["description"].startswith("podIP address allocated")


def test_pod_pending_without_statuses() -> None:
    assert cells(PODS, pod(phase="Pending")) == [
        "p", "0/2", "Pending", "0", "5m", "<none>", "<none>", "<none>", "<none>",
    ]  # fmt: skip


def test_pod_running_ready_with_restarts_ago() -> None:
    obj = pod(
        phase="Running",
        podIPs=[{"ip": "10.0.0.5"}],
        containerStatuses=[
            {"name": "a", "ready": True, "restartCount": 3, "state": RUNNING,
             "lastState": {"terminated": {"finishedAt": ago(seconds=10)}}},
            {"name": "b", "ready": False, "restartCount": 3, "state": RUNNING},
        ],
    )  # fmt: skip
    obj["spec"]["nodeName"] = "n1"
    assert cells(PODS, obj)[:7] == ["p", "1/2", "Running", "6 (10s ago)", "5m", "10.0.0.5", "n1"]


def test_pod_waiting_and_terminated_reasons() -> None:
    waiting = pod(
        phase="Pending",
        containerStatuses=[{"name": "a", "state": {"waiting": {"reason": "ImagePullBackOff"}}}],
    )
    assert cells(PODS, waiting)[2] == "ImagePullBackOff"
    signal = pod(
        phase="Failed",
        containerStatuses=[{"name": "a", "state": {"terminated": {"signal": 9, "exitCode": 137}}}],
    )
    assert cells(PODS, signal)[2] == "Signal:9"
    exit_code = pod(
        phase="Failed", containerStatuses=[{"name": "a", "state": {"terminated": {"exitCode": 2}}}]
    )
    assert cells(PODS, exit_code)[2] == "ExitCode:2"


def test_pod_completed_with_a_running_container_is_running_or_not_ready() -> None:
    statuses = [
        {"name": "a", "ready": True, "state": RUNNING},
        {"name": "b", "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
    ]
    assert cells(PODS, pod(phase="Running", containerStatuses=statuses))[2] == "NotReady"
    ready = pod(
        phase="Running",
        containerStatuses=statuses,
        conditions=[{"type": "Ready", "status": "True"}],
    )
    assert cells(PODS, ready)[1:3] == ["1/2", "Running"]


def test_pod_succeeded_row_carries_completed_condition() -> None:
    done = pod(
        phase="Succeeded",
        containerStatuses=[
            {"name": "a", "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}
        ],
    )
    row = to_table(PODS, [done], now=NOW)["rows"][0]
    assert row["cells"][2] == "Completed"
    assert row["conditions"] == [
        {
            "type": "Completed",
            "status": "True",
            "reason": "Succeeded",
            "message": "The pod has completed successfully.",
        }
    ]


def test_pod_init_containers() -> None:
    obj = pod(
        phase="Pending",
        initContainerStatuses=[
            {"name": "i1", "state": {"terminated": {"exitCode": 0}}},
            {"name": "i2", "state": {"running": {}}},
        ],
    )
    obj["spec"]["initContainers"] = [{"name": "i1"}, {"name": "i2"}]
    assert cells(PODS, obj)[2] == "Init:1/2"
    obj["status"]["initContainerStatuses"][1]["state"] = {"waiting": {"reason": "CrashLoopBackOff"}}
    assert cells(PODS, obj)[2] == "Init:CrashLoopBackOff"
    obj["status"]["initContainerStatuses"][1]["state"] = {"terminated": {"exitCode": 3}}
    assert cells(PODS, obj)[2] == "Init:ExitCode:3"


def test_pod_sidecar_counts_in_total_and_ready() -> None:
    obj = pod(
        phase="Running",
        initContainerStatuses=[
            {"name": "side", "started": True, "ready": True, "restartCount": 1, "state": RUNNING}
        ],
        containerStatuses=[
            {"name": "a", "ready": True, "state": RUNNING},
            {"name": "b", "ready": True, "state": RUNNING},
        ],
        conditions=[{"type": "Initialized", "status": "True"}],
    )
    obj["spec"]["initContainers"] = [{"name": "side", "restartPolicy": "Always"}]
    assert cells(PODS, obj)[1:4] == ["3/3", "Running", "1"]


def test_pod_terminating_and_readiness_gates_and_scheduling_gated() -> None:
    obj = pod(
        phase="Running",
        conditions=[{"type": "g1", "status": "True"}, {"type": "g2", "status": "False"}],
    )
    obj["metadata"]["deletionTimestamp"] = ago(seconds=1)
    obj["spec"]["readinessGates"] = [{"conditionType": "g1"}, {"conditionType": "g2"}]
    row = cells(PODS, obj)
    assert row[2] == "Terminating"
    assert row[8] == "1/2"
    gated = pod(phase="Pending", conditions=[{"type": "PodScheduled", "reason": "SchedulingGated"}])
    assert cells(PODS, gated)[2] == "SchedulingGated"


def test_node_row() -> None:
    node = {
        "metadata": {
            "name": "n1",
            "creationTimestamp": ago(days=3),
            "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "x"},
        },
        "spec": {"unschedulable": True},
        "status": {
            "conditions": [{"type": "Ready", "status": "False"}],
            "nodeInfo": {"kubeletVersion": "v1.37.0", "osImage": "Debian"},
            "addresses": [{"type": "InternalIP", "address": "10.1.1.1"}],
        },
    }
    assert cells(Res("", "v1", "Node", "nodes"), node) == [
        "n1", "NotReady,SchedulingDisabled", "control-plane,x", "3d", "v1.37.0",
        "10.1.1.1", "<none>", "Debian", "<unknown>", "<unknown>",
    ]  # fmt: skip
    bare = {"metadata": {"name": "n2"}}
    row = cells(Res("", "v1", "Node", "nodes"), bare)
    assert row[:4] == ["n2", "Unknown", "<none>", "<unknown>"]


def test_namespace_configmap_secret_rows() -> None:
    ns = {
        "metadata": {"name": "default", "creationTimestamp": ago(hours=30)},
        "status": {"phase": "Active"},
    }
    assert cells(Res("", "v1", "Namespace", "namespaces"), ns) == ["default", "Active", "30h"]
    cm = {"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}}
    assert cells(Res("", "v1", "ConfigMap", "configmaps"), cm) == ["c", 3, "<unknown>"]
    secret = {"metadata": {"name": "s"}, "type": "Opaque", "data": {"k": "dg=="}}
    assert cells(Res("", "v1", "Secret", "secrets"), secret) == ["s", "Opaque", 1, "<unknown>"]


SERVICES = Res("", "v1", "Service", "services")


def test_service_rows() -> None:
    svc = {
        "metadata": {"name": "web"},
        "spec": {
            "type": "NodePort",
            "clusterIPs": ["10.96.0.10"],
            "ports": [
                {"port": 80, "nodePort": 30080, "protocol": "TCP"},
                {"port": 53, "protocol": "UDP"},
            ],
            "selector": {"b": "2", "a": "1"},
        },
    }
    assert cells(SERVICES, svc) == [
        "web", "NodePort", "10.96.0.10", "<none>", "80:30080/TCP,53/UDP", "<unknown>", "a=1,b=2",
    ]  # fmt: skip
    lb = {"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "externalIPs": ["1.2.3.4"]}}
    assert cells(SERVICES, lb)[2:5] == ["<none>", "1.2.3.4", "<none>"]
    pending = {"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer"}}
    assert cells(SERVICES, pending)[3] == "<pending>"
    ext = {"metadata": {"name": "e"}, "spec": {"type": "ExternalName", "externalName": "x.org"}}
    assert cells(SERVICES, ext)[3] == "x.org"


def test_event_row() -> None:
    ev = {
        "metadata": {"name": "p.17a"},
        "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{a}"},
        "reason": "Pulled",
        "message": "  pulled image \n",
        "type": "Normal",
        "source": {"component": "kubelet", "host": "n1"},
        "firstTimestamp": ago(minutes=20),
        "lastTimestamp": ago(minutes=2),
        "count": 4,
    }
    assert cells(Res("", "v1", "Event", "events"), ev) == [
        "2m", "Normal", "Pulled", "pod/p", "spec.containers{a}", "kubelet, n1",
        "pulled image", "20m", 4, "p.17a",
    ]  # fmt: skip
    new_api = {
        "metadata": {"name": "e"},
        "involvedObject": {"kind": "Node"},
        "eventTime": ago(seconds=30),
    }
    row = cells(Res("", "v1", "Event", "events"), new_api)
    assert [row[0], row[3], row[7], row[8]] == ["30s", "node", "30s", 1]


def test_serviceaccount_row() -> None:
    sa = {"metadata": {"name": "default"}, "secrets": [{"name": "s"}]}
    assert cells(Res("", "v1", "ServiceAccount", "serviceaccounts"), sa) == [
        "default", 1, "<unknown>",
    ]  # fmt: skip
