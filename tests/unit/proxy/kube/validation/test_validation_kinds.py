"""Validation of Services, ConfigMaps, Secrets, Namespaces, Nodes, apps workloads, Jobs
and CronJobs: cases of upstream's core, apps and batch ``validation_test.go`` with
kube-apiserver's messages; quantities and cron schedules as upstream parses them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from proxy.apimachinery import quantity
from proxy.kube.validation import apps, batch, core, cron, event

JSON = dict[str, Any]
META = {"name": "x", "namespace": "ns", "uid": "u1"}
TEMPLATE = {
    "metadata": {"labels": {"a": "b"}},
    "spec": {"containers": [{"name": "c", "image": "i"}]},
}


def strs(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def test_quantities_print_canonically() -> None:
    cases = {"1000m": "1", "500m": "500m", "1Gi": "1Gi", "1024Mi": "1Gi", "1.5Gi": "1536Mi",
             "0.5": "500m", "2e3": "2e3", "1k": "1k", "100": "100", "0.5Ki": "512"}  # fmt: skip
    for text, canonical in cases.items():
        parsed = quantity.parse(text)
        assert parsed is not None and str(parsed) == canonical, text
    assert quantity.parse("1 Gi") is None and quantity.parse("abc") is None


@pytest.mark.parametrize(
    ("schedule", "error"),
    [
        ("* * * * *", None),
        ("*/5 1-3 * jan-mar mon", None),
        ("@hourly", None),
        ("@every 1h30m", None),
        ("* * *", "expected exactly 5 fields, found 3: [* * *]"),
        ("61 * * * *", "end of range (61) above maximum (59): 61"),
        ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
        ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
        ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
        ("@sometimes", "unrecognized descriptor: @sometimes"),
    ],
)
def test_cron_schedules(schedule: str, error: str | None) -> None:
    assert cron.schedule_error(schedule) == error


# ---------------------------------------------------------------------- Service


def service(**spec: Any) -> JSON:
    return {"metadata": dict(META), "spec": spec}


def test_service_ports_and_types() -> None:
    assert core.validate_service(service(ports=[{"port": 80}])) == []
    assert core.validate_service(service(clusterIP="None")) == []  # headless: no ports
    assert strs(core.validate_service(service())) == ["spec.ports: Required value"]
    assert strs(core.validate_service(service(type="ExternalName"))) == [
        "spec.externalName: Required value"
    ]
    named = service(
        ports=[{"name": "a", "port": 80}, {"name": "a", "port": 81, "targetPort": "x-"}]
    )
    assert strs(core.validate_service(named)) == [
        'spec.ports[1].name: Duplicate value: "a"',
        'spec.ports[1].targetPort: Invalid value: "x-": must not begin or end with a hyphen',
    ]
    assert strs(core.validate_service(service(ports=[{"port": 80, "nodePort": 30001}]))) == [
        "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"
    ]
    ips = service(ports=[{"port": 80}], clusterIP="10.0.0.1", clusterIPs=["10.0.0.2"])
    assert strs(core.validate_service(ips)) == [
        'spec.clusterIPs: Invalid value: []string{"10.0.0.2"}: first value must match `clusterIP`'
    ]
    bad_ip = service(ports=[{"port": 80}], clusterIP="999.0.0.1")
    assert strs(core.validate_service(bad_ip)) == [
        'spec.clusterIPs[0]: Invalid value: "999.0.0.1": must be a valid IP address, (e.g. '
        "10.9.8.7 or 2001:db8::ffff)"
    ]


def test_service_cluster_ip_is_kept_and_immutable() -> None:
    old = service(ports=[{"port": 80}], clusterIP="10.0.0.1", clusterIPs=["10.0.0.1"])
    kept = service(ports=[{"port": 80}])
    core.prepare_service_update(kept, old)  # a client that leaves it out keeps it
    assert kept["spec"]["clusterIP"] == "10.0.0.1" and core.validate_service_update(kept, old) == []
    moved = service(ports=[{"port": 80}], clusterIP="10.0.0.9")
    core.prepare_service_update(moved, old)
    assert strs(core.validate_service_update(moved, old)) == [
        'spec.clusterIPs[0]: Invalid value: []string{"10.0.0.9"}: may not change once set'
    ]


# ------------------------------------------------------------ ConfigMap, Secret


def test_config_map_keys_and_immutability() -> None:
    cm = {"metadata": dict(META), "data": {"ok": "1", "b*d": "x"}, "binaryData": {"ok": "eA=="}}
    assert [e.field for e in core.validate_config_map(cm)] == ["data[b*d]", "data[ok]"]
    big = {"metadata": dict(META), "data": {"a": "x" * (core.MAX_SECRET_SIZE + 1)}}
    assert strs(core.validate_config_map(big)) == [": Too long: may not be more than 1048576 bytes"]
    old = {"metadata": dict(META), "data": {"a": "1"}, "immutable": True}
    assert core.validate_config_map_update(copy.deepcopy(old), old) == []
    new = {"metadata": dict(META), "data": {"a": "2"}}
    assert strs(core.validate_config_map_update(new, old)) == [
        "immutable: Forbidden: field is immutable when `immutable` is set",
        "data: Forbidden: field is immutable when `immutable` is set",
    ]


def test_secret_types() -> None:
    tls = {"metadata": dict(META), "type": "kubernetes.io/tls", "data": {"tls.crt": "eA=="}}
    assert strs(core.validate_secret(tls)) == ["data[tls.key]: Required value"]
    token = {"metadata": dict(META), "type": "kubernetes.io/service-account-token"}
    assert strs(core.validate_secret(token)) == [
        "metadata.annotations[kubernetes.io/service-account.name]: Required value"
    ]
    basic = {"metadata": dict(META), "type": "kubernetes.io/basic-auth", "data": {}}
    assert strs(core.validate_secret(basic)) == [
        "data[username]: Required value",
        "data[password]: Required value",
    ]
    old = {"metadata": dict(META), "type": "Opaque", "data": {}}
    new = {**old, "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}}
    assert strs(core.validate_secret_update(new, old)) == [
        'type: Invalid value: "kubernetes.io/tls": field is immutable'
    ]


def test_namespaces_and_nodes() -> None:
    ns = {"metadata": {"name": "a.b"}, "spec": {"finalizers": ["kubernetes", "mine"]}}
    assert strs(core.validate_namespace(ns)) == [
        'metadata.name: Invalid value: "a.b": must not contain dots',
        'spec.finalizers: Invalid value: "mine": name is neither a standard finalizer name nor '
        "is it fully qualified",
    ]
    node = {"metadata": {"name": "n"}, "spec": {"taints": [{"key": "k", "effect": "Soon"}]}}
    assert strs(core.validate_node(node)) == [
        'metadata.taints[0].effect: Unsupported value: "Soon": supported values: "NoSchedule", '
        '"PreferNoSchedule", "NoExecute"'
    ]
    old = {"metadata": {"name": "n"}, "spec": {"podCIDRs": ["10.0.0.0/24"], "providerID": "p"}}
    new = {"metadata": {"name": "n"}, "spec": {"podCIDRs": ["10.1.0.0/24"], "providerID": "q"}}
    assert strs(core.validate_node_update(new, old)) == [
        'spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid',
        'spec.providerID: Forbidden: node updates may not change providerID except from "" to '
        "valid",
    ]


def test_core_events_get_kubes_legacy_checks_only() -> None:
    ev = {
        "metadata": {"name": "Bad_Name", "namespace": "ns"},
        "involvedObject": {"namespace": "ns"},
    }
    assert event.validate_event(ev) == []  # names of v1 events are only path segments
    assert strs(event.validate_event({**ev, "involvedObject": {"namespace": "other"}})) == [
        'involvedObject.namespace: Invalid value: "other": does not match event.namespace'
    ]
    timed = {**ev, "eventTime": "2024-01-02T03:04:05.000000Z"}
    assert strs(event.validate_event(timed)) == [
        "reportingComponent: Required value",
        'reportingComponent: Invalid value: "": name part must be non-empty',
        'reportingComponent: Invalid value: "": name part must consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        "reportingInstance: Required value",
        "action: Required value",
        "reason: Required value",
    ]


# ------------------------------------------------------------------------- apps


def workload(**spec: Any) -> JSON:
    return {"metadata": dict(META), "spec": {"template": copy.deepcopy(TEMPLATE), **spec}}


def test_deployments_and_replica_sets() -> None:
    ok = workload(selector={"matchLabels": {"a": "b"}})
    assert apps.validate_deployment(ok) == [] and apps.validate_replica_set(ok) == []
    bad = workload(selector={"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"]}]},
                   replicas=-1, progressDeadlineSeconds=5, minReadySeconds=10)  # fmt: skip
    bad["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    assert strs(apps.validate_deployment(bad)) == [
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        'spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: '
        '"Always"',
        "spec.progressDeadlineSeconds: Invalid value: 5: must be greater than minReadySeconds",
    ]
    changed = workload(selector={"matchLabels": {"a": "b", "c": "d"}})
    changed["spec"]["template"]["metadata"]["labels"]["c"] = "d"
    assert strs(apps.validate_replica_set_update(changed, ok)) == [
        'spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"a":"b", '
        '"c":"d"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable'
    ]


def test_deployment_strategies() -> None:
    def errors(strategy: JSON) -> list[str]:
        obj = workload(selector={"matchLabels": {"a": "b"}}, strategy=strategy)
        return strs(apps.validate_deployment(obj))

    assert errors({"type": "Recreate"}) == [] and errors({"rollingUpdate": {"maxSurge": 1}}) == []
    assert errors({"type": "Recreate", "rollingUpdate": {}}) == [
        "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is "
        "'Recreate'"
    ]
    assert errors({"rollingUpdate": {"maxSurge": "0%", "maxUnavailable": 0}}) == [
        "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:0, "
        'IntVal:0, StrVal:""}: may not be 0 when `maxSurge` is 0'
    ]
    assert errors({"rollingUpdate": {"maxUnavailable": "150%"}}) == [
        "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, "
        'IntVal:0, StrVal:"150%"}: must not be greater than 100%'
    ]
    assert errors({"type": "Blue"}) == [
        'spec.strategy: Unsupported value: apps.DeploymentStrategy{Type:"Blue", '
        'RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}: supported values: "Recreate", '
        '"RollingUpdate"'
    ]


def test_stateful_sets_and_daemon_sets() -> None:
    sts = workload(selector={"matchLabels": {"a": "b"}}, serviceName="web")
    assert apps.validate_stateful_set(sts) == []
    moved = workload(selector={"matchLabels": {"a": "b"}}, serviceName="other", replicas=3)
    assert strs(apps.validate_stateful_set_update(moved, sts)) == [
        "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', "
        "'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
        "'minReadySeconds' are forbidden"
    ]
    ds = workload()  # no selector: nothing matches the template
    assert strs(apps.validate_daemon_set(ds)) == [
        'spec.template.metadata.labels: Invalid value: map[string]string{"a":"b"}: `selector` '
        "does not match template `labels`"
    ]


# ------------------------------------------------------------------------ batch


def job(**spec: Any) -> JSON:
    obj = workload(**spec)
    obj["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    return obj


def test_jobs_generate_their_selector() -> None:
    obj = job()
    batch.prepare_job_for_create(obj)
    assert obj["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}}
    assert obj["spec"]["template"]["metadata"]["labels"] == {
        "a": "b", "job-name": "x", "batch.kubernetes.io/job-name": "x",
        "controller-uid": "u1", "batch.kubernetes.io/controller-uid": "u1",
    }  # fmt: skip
    assert batch.validate_job(obj) == []
    wrong = job(selector={"matchLabels": {"a": "b"}})
    batch.prepare_job_for_create(wrong)
    assert "spec.selector" in [e.field for e in batch.validate_job(wrong)]
    manual = job(selector={"matchLabels": {"a": "b"}}, manualSelector=True, parallelism=-1)
    assert strs(batch.validate_job(manual)) == [
        "spec.parallelism: Invalid value: -1: must be greater than or equal to 0"
    ]


def test_job_updates_keep_the_template() -> None:
    old = job()
    batch.prepare_job_for_create(old)
    assert batch.validate_job_update(copy.deepcopy(old), old) == []
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "other"
    [error] = batch.validate_job_update(new, old)
    assert error.field == "spec.template" and error.body.endswith(": field is immutable")
    assert error.body.startswith("Invalid value: core.PodTemplateSpec{")


def test_cron_jobs() -> None:
    template = {"spec": {"template": job()["spec"]["template"]}}
    ok: JSON = {
        "metadata": dict(META),
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": template},
    }
    assert batch.validate_cron_job(ok) == []
    long_name = copy.deepcopy(ok)
    long_name["metadata"]["name"] = "a" * 53
    assert strs(batch.validate_cron_job(long_name)) == [
        f'metadata.name: Invalid value: "{"a" * 53}": must be no more than 52 characters'
    ]
    tz = copy.deepcopy(ok)
    tz["spec"]["schedule"] = "TZ=UTC * * * * *"
    tz["spec"]["concurrencyPolicy"] = "Sometimes"
    assert strs(batch.validate_cron_job(tz)) == [
        'spec.schedule: Invalid value: "TZ=UTC * * * * *": cannot use TZ or CRON_TZ in schedule, '
        "use timeZone field instead",
        'spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", '
        '"Forbid", "Replace"',
    ]
