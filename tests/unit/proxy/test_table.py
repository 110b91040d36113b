"""Server-side Tables: kubectl's printer columns and cells (printers_test.go cases),
HumanDuration, includeObject, list metadata, watch events, Accept negotiation."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from proxy.printers.table import (
    AcceptedFormat,
    NotAcceptableError,
    TableError,
    TableWatchEncoder,
    as_partial_object_metadata,
    as_partial_object_metadata_list,
    default_columns_table,
    format_label_selector,
    human_duration,
    parse_accept,
    table_watch_event,
    to_table,
)
from tests.unit.proxy.resources import Res

NOW = dt.datetime(2026, 1, 10, 12, 0, 0, tzinfo=dt.UTC)


def ago(**kw: float) -> str:
    return (NOW - dt.timedelta(**kw)).strftime("%Y-%m-%dT%H:%M:%SZ")


PODS = Res("", "v1", "Pod", "pods")


def cells(res: Res, obj: dict[str, Any]) -> list[Any]:
    table = to_table(res, [obj], include_object="None", now=NOW)
    row: list[Any] = table["rows"][0]["cells"]
    return row


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (125, "2m5s"),
        (600, "10m"),
        (179 * 60, "179m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 60, "3h1m"),
        (8 * 3600, "8h"),
        (47 * 3600, "47h"),
        (48 * 3600, "2d"),
        (50 * 3600, "2d2h"),
        (8 * 86400, "8d"),
        (730 * 86400, "2y"),
        (731 * 86400, "2y1d"),
        (8 * 365 * 86400, "8y"),
    ],
)
def test_human_duration(seconds: int, text: str) -> None:
    assert human_duration(dt.timedelta(seconds=seconds)) == text


def pod(**status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "creationTimestamp": ago(minutes=5), "resourceVersion": "7"},
        "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
        "status": status,
    }


RUNNING = {"running": {"startedAt": ago(minutes=4)}}


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


def test_label_selector_formatting() -> None:
    assert format_label_selector(None) == ""
    sel = {
        "matchExpressions": [
            {"key": "z", "operator": "DoesNotExist"},
            {"key": "a", "operator": "Exists"},
            {"key": "m", "operator": "NotIn", "values": ["y", "x"]},
        ]
    }
    assert format_label_selector(sel) == "a,m notin (x,y),!z"


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


def test_job_rows() -> None:
    jobs = Res("batch", "v1", "Job", "jobs")
    job = {
        "metadata": {"name": "j", "creationTimestamp": ago(minutes=3)},
        "spec": {
            "completions": 2,
            "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
        },
        "status": {
            "succeeded": 2,
            "startTime": ago(minutes=3),
            "completionTime": ago(minutes=1),
            "conditions": [{"type": "Complete", "status": "True"}],
        },
    }
    assert cells(jobs, job) == ["j", "Complete", "2/2", "2m", "3m", "c", "busybox", "<none>"]
    running = {
        "metadata": {"name": "k"},
        "spec": {"parallelism": 3},
        "status": {"startTime": ago(seconds=40)},
    }
    assert cells(jobs, running)[1:4] == ["Running", "0/1 of 3", "40s"]


def test_generic_name_age_and_default_convertor() -> None:
    lease = {"metadata": {"name": "l", "creationTimestamp": ago(seconds=5)}}
    table = to_table(Res("example.io", "v1", "Widget", "widgets"), [lease], now=NOW)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Age"]
    assert table["rows"][0]["cells"] == ["l", "5s"]
    default = default_columns_table([lease])
    assert [c["name"] for c in default["columnDefinitions"]] == ["Name", "Created At"]
    assert default["columnDefinitions"][1]["type"] == "date"
    assert default["rows"][0]["cells"] == ["l", lease["metadata"]["creationTimestamp"]]


def test_include_object_and_list_meta() -> None:
    obj = pod(phase="Running")
    meta = {"resourceVersion": "42", "continue": "tok", "remainingItemCount": 3}
    table = to_table(PODS, [obj], list_meta=meta, now=NOW, table_version="v1beta1")
    assert table["apiVersion"] == "meta.k8s.io/v1beta1"
    assert table["kind"] == "Table"
    assert table["metadata"] == meta
    assert table["rows"][0]["object"] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1beta1",
        "metadata": obj["metadata"],
    }
    full = to_table(PODS, [obj], include_object="Object", list_meta={}, now=NOW)
    assert full["rows"][0]["object"] is obj
    assert full["metadata"] == {}
    none = to_table(PODS, [obj], include_object="None", now=NOW, no_headers=True)
    assert none["rows"][0]["object"] is None
    assert none["columnDefinitions"] == []
    assert none["metadata"] == {"resourceVersion": "7"}  # a single GET: the object's RV
    with pytest.raises(TableError, match='unrecognized includeObject value: "Bogus"'):
        to_table(PODS, [obj], include_object="Bogus", now=NOW)


def test_watch_event_table() -> None:
    event = table_watch_event(PODS, "MODIFIED", pod(phase="Running"), now=NOW)
    assert event["type"] == "MODIFIED"
    assert event["object"]["kind"] == "Table"
    assert len(event["object"]["rows"]) == 1
    status = {"kind": "Status", "code": 410}
    assert table_watch_event(PODS, "ERROR", status, now=NOW) == {"type": "ERROR", "object": status}


KUBECTL_GET = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)


@pytest.mark.parametrize(
    ("header", "is_list", "expected"),
    [
        (None, False, AcceptedFormat("json")),
        ("", True, AcceptedFormat("json")),
        ("*/*", False, AcceptedFormat("json")),
        (KUBECTL_GET, True, AcceptedFormat("table", "application/json", "v1")),
        ("application/json;as=Table;v=v1beta1;g=meta.k8s.io", False,
         AcceptedFormat("table", "application/json", "v1beta1")),
        ("application/json;as=Table;v=v2;g=meta.k8s.io,application/json", False,
         AcceptedFormat("json")),
        ("application/vnd.kubernetes.protobuf,application/json", False, AcceptedFormat("json")),
        ("application/yaml", False, AcceptedFormat("yaml", "application/yaml")),
        ("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", True,
         AcceptedFormat("partial-list", "application/json", "v1")),
        ("application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", False,
         AcceptedFormat("partial", "application/json", "v1")),
        ("application/yaml;q=0.5,application/json", False, AcceptedFormat("json")),
    ],
)  # fmt: skip
def test_parse_accept(header: str | None, is_list: bool, expected: AcceptedFormat) -> None:
    assert parse_accept(header, is_list=is_list) == expected


def test_parse_accept_not_acceptable() -> None:
    for header in (
        "application/vnd.kubernetes.protobuf",
        "text/html",
        "application/json;as=Table;v=v1;g=other.io",
        "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",  # for a list
    ):
        with pytest.raises(NotAcceptableError) as info:
            parse_accept(header, is_list=True)
        assert info.value.status_code == 406
        assert str(info.value) == (
            "only the following media types are accepted: application/json, application/yaml"
        )


def test_content_types() -> None:
    assert parse_accept(KUBECTL_GET).content_type == "application/json;as=Table;v=v1;g=meta.k8s.io"
    assert AcceptedFormat("json").content_type == "application/json"


def test_watch_encoder_sends_headers_on_the_first_printed_event_only() -> None:
    encoder = TableWatchEncoder(PODS, include_object="Object")
    bookmark = {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "9"}}
    assert encoder.encode("BOOKMARK", bookmark, NOW) == {"type": "BOOKMARK", "object": bookmark}
    first = encoder.encode("ADDED", pod(phase="Running"), NOW)["object"]
    second = encoder.encode("MODIFIED", pod(phase="Running"), NOW)["object"]
    assert len(first["columnDefinitions"]) == 9
    assert second["columnDefinitions"] == []
    assert second["rows"][0]["object"]["spec"]  # includeObject=Object
    assert second["metadata"] == {"resourceVersion": "7"}


def test_partial_object_metadata() -> None:
    obj = pod()
    assert as_partial_object_metadata(obj, "v1beta1") == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1beta1",
        "metadata": obj["metadata"],
    }
    listed = as_partial_object_metadata_list([obj], {"resourceVersion": "3", "continue": ""})
    assert listed["kind"] == "PartialObjectMetadataList"
    assert listed["metadata"] == {"resourceVersion": "3"}
    assert listed["items"] == [as_partial_object_metadata(obj)]


TEMPLATE = {"spec": {"containers": [{"name": "c", "image": "img"}]}}


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


def test_cronjob_lease_serviceaccount_rows() -> None:
    cj = {
        "metadata": {"name": "nightly", "creationTimestamp": ago(days=3)},
        "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": TEMPLATE}}},
        "status": {"active": [{"name": "j1"}], "lastScheduleTime": ago(hours=9)},
    }
    assert cells(Res("batch", "v1", "CronJob", "cronjobs"), cj) == [
        "nightly", "0 3 * * *", "<none>", "False", 1, "9h", "3d", "c", "img", "<none>",
    ]  # fmt: skip
    lease = {"metadata": {"name": "l"}, "spec": {"holderIdentity": "node-1"}}
    assert cells(Res("coordination.k8s.io", "v1", "Lease", "leases"), lease) == [
        "l", "node-1", "<unknown>",
    ]  # fmt: skip
    sa = {"metadata": {"name": "default"}, "secrets": [{"name": "s"}]}
    assert cells(Res("", "v1", "ServiceAccount", "serviceaccounts"), sa) == [
        "default", 1, "<unknown>",
    ]  # fmt: skip


def test_rbac_rows() -> None:
    rbac = "rbac.authorization.k8s.io"
    role = {"metadata": {"name": "r", "creationTimestamp": "2026-01-10T11:00:00+01:00"}}
    table = to_table(Res(rbac, "v1", "ClusterRole", "clusterroles"), [role], now=NOW)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Created At"]
    assert table["rows"][0]["cells"] == ["r", "2026-01-10T10:00:00Z"]
    binding = {
        "metadata": {"name": "b", "creationTimestamp": ago(minutes=1)},
        "roleRef": {"kind": "ClusterRole", "name": "view"},
        "subjects": [
            {"kind": "User", "name": "alice"},
            {"kind": "Group", "name": "devs"},
            {"kind": "ServiceAccount", "name": "bot", "namespace": "ci"},
            {"kind": "User", "name": "bob"},
        ],
    }
    assert cells(Res(rbac, "v1", "RoleBinding", "rolebindings"), binding) == [
        "b", "ClusterRole/view", "60s", "alice, bob", "devs", "ci/bot",
    ]  # fmt: skip
