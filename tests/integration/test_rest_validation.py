"""Objects are validated as kube-apiserver validates them before storage, on create,
update, patch and /scale, through the real HTTP server over a real etcd. Each answer
below is kube-apiserver's (1.32, the same requests): code, reason, message and
details.causes, one 422 Invalid per write naming every violation."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from tests.integration.conftest import pod_body

pytestmark = pytest.mark.etcd

JSON = dict[str, Any]
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
POD_UPDATE_FORBIDDEN = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)\n"
)


def _path(ns: str, resource: str, name: str = "", group: str = "") -> str:
    base = f"/apis/{group}/v1" if group else "/api/v1"
    return f"{base}/namespaces/{ns}/{resource}" + (f"/{name}" if name else "")


async def _send(
    http: aiohttp.ClientSession, method: str, path: str, body: Any, ctype: str = ""
) -> tuple[int, JSON]:
    headers = {"Content-Type": ctype} if ctype else {}
    kwargs: dict[str, Any] = {"json": body} if not ctype else {"data": _dumps(body)}
    async with http.request(method, path, headers=headers, **kwargs) as resp:
        data: JSON = await resp.json()
        return resp.status, data


async def create(http: aiohttp.ClientSession, path: str, body: JSON, code: int = 201) -> JSON:
    """POST ``body``; the decoded answer, its status code asserted."""
    got, data = await _send(http, "POST", path, body)
    assert got == code, data
    return data


def _pod(name: str = "") -> JSON:
    body: JSON = pod_body(name)
    return body


def _dumps(body: Any) -> bytes:
    import orjson

    return orjson.dumps(body)


def _invalid(status: JSON, message: str, causes: list[tuple[str, str, str]]) -> None:
    """``status`` is kube's 422 Invalid with this message and these (reason, field,
    message) causes."""
    assert status["code"] == 422 and status["reason"] == "Invalid", status
    assert status["message"] == message
    got = [(c["reason"], c["field"], c["message"]) for c in status["details"]["causes"]]
    assert got == causes


def _details(status: JSON) -> JSON:
    return {k: v for k, v in status["details"].items() if k != "causes"}


# -- create --------------------------------------------------------------------------


@pytest.mark.parametrize("spec", [None, {}], ids=["no-spec", "empty-spec"])
async def test_pod_without_containers(
    http: aiohttp.ClientSession, namespace: str, spec: JSON | None
) -> None:
    body: JSON = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nocont"}}
    if spec is not None:
        body["spec"] = spec
    status = await create(http, _path(namespace, "pods"), body, 422)
    _invalid(
        status,
        'Pod "nocont" is invalid: spec.containers: Required value',
        [("FieldValueRequired", "spec.containers", "Required value")],
    )
    assert _details(status) == {"name": "nocont", "kind": "Pod"}
    async with http.get(_path(namespace, "pods", "nocont")) as resp:
        assert resp.status == 404  # nothing was stored


async def test_every_violation_in_one_answer(http: aiohttp.ClientSession, namespace: str) -> None:
    containers = [
        {"image": "x"},
        {"name": "Bad_Name", "image": "busybox"},
        {"name": "dup", "image": "busybox"},
        {"name": "dup"},
    ]
    body = _pod("many")
    body["spec"] = {"containers": containers, "restartPolicy": "Sometimes", "dnsPolicy": "X"}
    status = await create(http, _path(namespace, "pods"), body, 422)
    causes = [
        ("FieldValueRequired", "spec.containers[0].name", "Required value"),
        ("FieldValueInvalid", "spec.containers[1].name", f'Invalid value: "Bad_Name": {LABEL_MSG}'),
        ("FieldValueRequired", "spec.containers[3].image", "Required value"),
        ("FieldValueDuplicate", "spec.containers[3].name", 'Duplicate value: "dup"'),
        (
            "FieldValueNotSupported",
            "spec.restartPolicy",
            'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
        ),
        (
            "FieldValueNotSupported",
            "spec.dnsPolicy",
            'Unsupported value: "X": supported values: "ClusterFirstWithHostNet", '
            '"ClusterFirst", "Default", "None"',
        ),
    ]
    message = 'Pod "many" is invalid: [' + ", ".join(f"{f}: {m}" for _, f, m in causes) + "]"
    _invalid(status, message, causes)


async def test_container_ports(http: aiohttp.ClientSession, namespace: str) -> None:
    ports = [
        {"containerPort": 0},
        {"containerPort": 70000, "protocol": "tcp"},
        {"name": "web", "containerPort": 1},
        {"name": "web", "containerPort": 2},
        {"name": "-x", "containerPort": 3},
    ]
    body = _pod("ports")
    body["spec"] = {"containers": [{"name": "c", "image": "busybox", "ports": ports}]}
    status = await create(http, _path(namespace, "pods"), body, 422)
    p = "spec.containers[0].ports"
    causes = [
        ("FieldValueRequired", f"{p}[0].containerPort", "Required value"),
        (
            "FieldValueInvalid",
            f"{p}[1].containerPort",
            "Invalid value: 70000: must be between 1 and 65535, inclusive",
        ),
        (
            "FieldValueNotSupported",
            f"{p}[1].protocol",
            'Unsupported value: "tcp": supported values: "SCTP", "TCP", "UDP"',
        ),
        ("FieldValueDuplicate", f"{p}[3].name", 'Duplicate value: "web"'),
        (
            "FieldValueInvalid",
            f"{p}[4].name",
            'Invalid value: "-x": must not begin or end with a hyphen',
        ),
    ]
    message = 'Pod "ports" is invalid: [' + ", ".join(f"{f}: {m}" for _, f, m in causes) + "]"
    _invalid(status, message, causes)


async def test_names_by_kind(http: aiohttp.ClientSession, namespace: str) -> None:
    status = await create(http, _path(namespace, "pods"), _pod("Bad_Name"), 422)
    body = f'Invalid value: "Bad_Name": {SUBDOMAIN_MSG}'
    _invalid(status, f'Pod "Bad_Name" is invalid: metadata.name: {body}',
             [("FieldValueInvalid", "metadata.name", body)])  # fmt: skip
    # Services are DNS-1035 labels, Namespaces DNS-1123 labels, StatefulSets labels too
    svc = {"metadata": {"name": "1svc"}, "spec": {"ports": [{"port": 80}]}}
    status = await create(http, _path(namespace, "services"), svc, 422)
    assert status["message"] == (
        'Service "1svc" is invalid: metadata.name: Invalid value: "1svc": a DNS-1035 label must '
        "consist of lower case alphanumeric characters or '-', start with an alphabetic "
        "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
        "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
    )
    status = await create(http, "/api/v1/namespaces", {"metadata": {"name": "Bad.NS"}}, 422)
    body = f'Invalid value: "Bad.NS": {LABEL_MSG}'
    _invalid(status, f'Namespace "Bad.NS" is invalid: metadata.name: {body}',
             [("FieldValueInvalid", "metadata.name", body)])  # fmt: skip


async def test_generate_name_is_validated(http: aiohttp.ClientSession, namespace: str) -> None:
    body = _pod()
    body["metadata"] = {"generateName": "Bad-"}
    status = await create(http, _path(namespace, "pods"), body, 422)
    generated = status["details"]["name"]
    assert generated.startswith("Bad-") and len(generated) == 9
    _invalid(
        status,
        f'Pod "{generated}" is invalid: [metadata.generateName: Invalid value: "Bad-": '
        f'{SUBDOMAIN_MSG}, metadata.name: Invalid value: "{generated}": {SUBDOMAIN_MSG}]',
        [
            (
                "FieldValueInvalid",
                "metadata.generateName",
                f'Invalid value: "Bad-": {SUBDOMAIN_MSG}',
            ),
            (
                "FieldValueInvalid",
                "metadata.name",
                f'Invalid value: "{generated}": {SUBDOMAIN_MSG}',
            ),
        ],
    )


async def test_labels_annotations_finalizers(http: aiohttp.ClientSession, namespace: str) -> None:
    body = _pod("meta")
    body["metadata"] = {
        "name": "meta",
        "labels": {"ok": "-bad"},
        "annotations": {"Bad Key": "v"},
        "finalizers": ["custom"],
    }
    status = await create(http, _path(namespace, "pods"), body, 422)
    assert [(c["reason"], c["field"]) for c in status["details"]["causes"]] == [
        ("FieldValueInvalid", "metadata.labels"),
        ("FieldValueInvalid", "metadata.annotations"),
        ("FieldValueInvalid", "metadata.finalizers[0]"),
    ]
    messages = [c["message"] for c in status["details"]["causes"]]
    assert messages[0].startswith('Invalid value: "-bad": a valid label must be an empty string')
    assert messages[1].startswith('Invalid value: "Bad Key": name part must consist of')
    assert messages[2] == (
        'Invalid value: "custom": name is neither a standard finalizer name nor is it fully '
        "qualified"
    )


async def test_service_rules(http: aiohttp.ClientSession, namespace: str) -> None:
    services = _path(namespace, "services")
    status = await create(http, services, {"metadata": {"name": "s1"}, "spec": {}}, 422)
    _invalid(status, 'Service "s1" is invalid: spec.ports: Required value',
             [("FieldValueRequired", "spec.ports", "Required value")])  # fmt: skip
    spec = {
        "ports": [{"port": 80}, {"port": 80}, {"port": 0, "name": "x"}],
        "type": "Foo",
        "sessionAffinity": "Sticky",
    }
    status = await create(http, services, {"metadata": {"name": "s2"}, "spec": spec}, 422)
    assert status["message"] == (
        'Service "s2" is invalid: [spec.ports[0].name: Required value, spec.ports[1].name: '
        "Required value, spec.ports[2].port: Invalid value: 0: must be between 1 and 65535, "
        "inclusive, spec.ports[2].targetPort: Invalid value: 0: must be between 1 and 65535, "
        'inclusive, spec.sessionAffinity: Unsupported value: "Sticky": supported values: '
        '"ClientIP", "None", spec.type: Unsupported value: "Foo": supported values: '
        '"ClusterIP", "ExternalName", "LoadBalancer", "NodePort", spec.ports[1]: Duplicate '
        'value: core.ServicePort{Name:"", Protocol:"TCP", AppProtocol:(*string)(nil), Port:80, '
        'TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}]'
    )
    headless = {"metadata": {"name": "s3"}, "spec": {"clusterIP": "None"}}
    await create(http, services, headless)  # headless services need no ports


async def test_workload_selectors(http: aiohttp.ClientSession, namespace: str) -> None:
    template = {
        "metadata": {"labels": {"a": "b"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    deployments = _path(namespace, "deployments", group="apps")
    body = {"metadata": {"name": "d1"}, "spec": {"template": template}}
    status = await create(http, deployments, body, 422)
    _invalid(
        status,
        'Deployment.apps "d1" is invalid: [spec.selector: Required value, '
        'spec.template.metadata.labels: Invalid value: map[string]string{"a":"b"}: `selector` '
        "does not match template `labels`]",
        [
            ("FieldValueRequired", "spec.selector", "Required value"),
            (
                "FieldValueInvalid",
                "spec.template.metadata.labels",
                'Invalid value: map[string]string{"a":"b"}: `selector` does not match template '
                "`labels`",
            ),
        ],
    )
    assert _details(status) == {"name": "d1", "group": "apps", "kind": "Deployment"}
    body = {"metadata": {"name": "d3"}, "spec": {"selector": {}, "template": template}}
    status = await create(http, deployments, body, 422)
    assert status["message"] == (
        'Deployment.apps "d3" is invalid: spec.selector: Invalid value: v1.LabelSelector'
        "{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement"
        "(nil)}: empty selector is invalid for deployment"
    )


async def test_jobs_and_cronjobs(http: aiohttp.ClientSession, namespace: str) -> None:
    pod_spec = {"containers": [{"name": "c", "image": "busybox"}]}
    jobs = _path(namespace, "jobs", group="batch")
    body: JSON = {"metadata": {"name": "j1"}, "spec": {"template": {"spec": pod_spec}}}
    status = await create(http, jobs, body, 422)
    _invalid(
        status,
        'Job.batch "j1" is invalid: spec.template.spec.restartPolicy: Required value: valid '
        'values: "OnFailure", "Never"',
        [
            (
                "FieldValueRequired",
                "spec.template.spec.restartPolicy",
                'Required value: valid values: "OnFailure", "Never"',
            )
        ],
    )
    # a valid Job gets its selector generated, as the job strategy does
    body["spec"]["template"]["spec"] = {**pod_spec, "restartPolicy": "Never"}
    job = await create(http, jobs, body)
    uid = job["metadata"]["uid"]
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert job["spec"]["template"]["metadata"]["labels"]["job-name"] == "j1"
    job_template = {"spec": {"template": body["spec"]["template"]}}
    cron: JSON = {"metadata": {"name": "cj1"}, "spec": {"schedule": "61 * * * *"}}
    cron["spec"]["jobTemplate"] = job_template
    status = await create(http, _path(namespace, "cronjobs", group="batch"), cron, 422)
    assert status["message"] == (
        'CronJob.batch "cj1" is invalid: spec.schedule: Invalid value: "61 * * * *": end of '
        "range (61) above maximum (59): 61"
    )


async def test_dry_run_is_validated_and_stores_nothing(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    pods = _path(namespace, "pods")
    nocont = {"metadata": {"name": "dry"}}
    status = await create(http, pods + "?dryRun=All", nocont, 422)
    assert status["message"] == 'Pod "dry" is invalid: spec.containers: Required value'
    await create(http, pods + "?dryRun=All", _pod("dry"))
    async with http.get(_path(namespace, "pods", "dry")) as resp:
        assert resp.status == 404


# -- update and patch ----------------------------------------------------------------


async def test_pod_updates_limited_to_mutable_fields(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    pod = await create(http, _path(namespace, "pods"), _pod("up"))
    path = _path(namespace, "pods", "up")
    image = {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}}
    code, patched = await _send(http, "PATCH", path, image, STRATEGIC)
    assert code == 200 and patched["spec"]["containers"][0]["image"] == "busybox:2"
    code, status = await _send(http, "PATCH", path, {"spec": {"restartPolicy": "Never"}}, MERGE)
    assert code == 422 and status["reason"] == "Invalid"
    assert status["message"].startswith(f'Pod "up" is invalid: spec: {POD_UPDATE_FORBIDDEN}')
    [cause] = status["details"]["causes"]
    assert cause["reason"] == "FieldValueForbidden" and cause["field"] == "spec"
    assert cause["message"].startswith(POD_UPDATE_FORBIDDEN)
    more = {"spec": {"containers": [{"name": "d", "image": "x"}]}}
    code, status = await _send(http, "PATCH", path, more, STRATEGIC)
    _invalid(
        status,
        'Pod "up" is invalid: spec.containers: Forbidden: pod updates may not add or remove '
        "containers",
        [
            (
                "FieldValueForbidden",
                "spec.containers",
                "Forbidden: pod updates may not add or remove containers",
            )
        ],
    )
    # PUT of the whole object, and a dry-run patch, are validated the same way
    pod["spec"]["nodeName"] = "elsewhere"
    del pod["metadata"]["resourceVersion"]  # unconditional
    code, status = await _send(http, "PUT", path, pod)
    assert code == 422 and status["message"].startswith('Pod "up" is invalid: spec: Forbidden')
    code, status = await _send(http, "PATCH", path + "?dryRun=All",
                               {"spec": {"activeDeadlineSeconds": 0}}, MERGE)  # fmt: skip
    _invalid(
        status,
        'Pod "up" is invalid: spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 '
        "and 2147483647, inclusive",
        [
            (
                "FieldValueInvalid",
                "spec.activeDeadlineSeconds",
                "Invalid value: 0: must be between 1 and 2147483647, inclusive",
            )
        ],
    )


async def test_update_reports_metadata_errors_as_kube_counts_them(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    # BeforeUpdate's common checks and the namespace strategy's (Validate, then
    # ValidateUpdate) each see the label: four causes, one error in the message
    labels = {"metadata": {"labels": {"bad key": "x"}}}
    _, status = await _send(http, "PATCH", f"/api/v1/namespaces/{namespace}", labels, MERGE)
    body = (
        "Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', "
        "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
        "'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    )
    _invalid(status, f'Namespace "{namespace}" is invalid: metadata.labels: {body}',
             [("FieldValueInvalid", "metadata.labels", body)] * 4)  # fmt: skip


async def test_immutable_fields(http: aiohttp.ClientSession, namespace: str) -> None:
    services = _path(namespace, "services")
    svc = {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}], "clusterIP": "10.96.7.7"}}
    await create(http, services, svc)
    change: JSON = {"spec": {"clusterIP": "10.96.7.8", "clusterIPs": ["10.96.7.8"]}}
    code, status = await _send(http, "PATCH", f"{services}/web", change, MERGE)
    body = 'Invalid value: []string{"10.96.7.8"}: may not change once set'
    _invalid(status, f'Service "web" is invalid: spec.clusterIPs[0]: {body}',
             [("FieldValueInvalid", "spec.clusterIPs[0]", body)])  # fmt: skip

    configmaps = _path(namespace, "configmaps")
    frozen: JSON = {"metadata": {"name": "frozen"}, "data": {"a": "1"}, "immutable": True}
    await create(http, configmaps, frozen)
    change = {"data": {"a": "2"}, "immutable": False}
    code, status = await _send(http, "PATCH", f"{configmaps}/frozen", change, MERGE)
    forbidden = "Forbidden: field is immutable when `immutable` is set"
    _invalid(
        status,
        f'ConfigMap "frozen" is invalid: [immutable: {forbidden}, data: {forbidden}]',
        [
            ("FieldValueForbidden", "immutable", forbidden),
            ("FieldValueForbidden", "data", forbidden),
        ],
    )

    jobs = _path(namespace, "jobs", group="batch")
    template = {"spec": {"containers": [{"name": "c", "image": "x"}], "restartPolicy": "Never"}}
    await create(http, jobs, {"metadata": {"name": "j"}, "spec": {"template": template}})
    code, status = await _send(http, "PATCH", f"{jobs}/j", {"spec": {"completions": 3}}, MERGE)
    body = "Invalid value: 3: field is immutable"
    _invalid(status, f'Job.batch "j" is invalid: spec.completions: {body}',
             [("FieldValueInvalid", "spec.completions", body)])  # fmt: skip
    image = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "other"}]}}}}
    code, status = await _send(http, "PATCH", f"{jobs}/j", image, STRATEGIC)
    assert code == 422 and status["message"].startswith(
        'Job.batch "j" is invalid: spec.template: Invalid value: core.PodTemplateSpec{'
    )
    assert status["message"].endswith("}: field is immutable")

    deployments = _path(namespace, "deployments", group="apps")
    selector = {"matchLabels": {"a": "b"}}
    tmpl = {
        "metadata": {"labels": {"a": "b"}},
        "spec": template["spec"] | {"restartPolicy": "Always"},
    }
    await create(http, deployments, {"metadata": {"name": "d"},
                                     "spec": {"selector": selector, "template": tmpl}})  # fmt: skip
    more = {"spec": {"selector": {"matchLabels": {"a": "b", "c": "d"}},
                     "template": {"metadata": {"labels": {"c": "d"}}}}}  # fmt: skip
    code, status = await _send(http, "PATCH", f"{deployments}/d", more, STRATEGIC)
    body = (
        'Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"a":"b", "c":"d"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"
    )
    _invalid(status, f'Deployment.apps "d" is invalid: spec.selector: {body}',
             [("FieldValueInvalid", "spec.selector", body)])  # fmt: skip


async def test_node_taints_on_update(http: aiohttp.ClientSession) -> None:
    name = f"vnode-{id(http)}"
    await create(http, "/api/v1/nodes", {"metadata": {"name": name}})
    taints = [{"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoSchedule"}]
    _, status = await _send(
        http, "PATCH", f"/api/v1/nodes/{name}", {"spec": {"taints": taints}}, MERGE
    )
    body = (
        'Duplicate value: core.Taint{Key:"a", Value:"", Effect:"NoSchedule", TimeAdded:<nil>}: '
        "taints must be unique by key and effect pair"
    )
    # ValidateNode and ValidateNodeUpdate both check taints
    _invalid(status, f'Node "{name}" is invalid: metadata.taints[1]: {body}',
             [("FieldValueDuplicate", "metadata.taints[1]", body)] * 2)  # fmt: skip
    async with http.delete(f"/api/v1/nodes/{name}") as resp:
        assert resp.status == 200
