"""Pod validation: cases of ``pkg/apis/core/validation/validation_test.go``
(TestValidateContainers, TestValidatePorts, TestValidateVolumes, TestValidatePodSpec,
TestValidatePodUpdate) on the wire form, with upstream's field paths and messages."""

from __future__ import annotations

import copy
from typing import Any

from proxy.kube.validation.pod import validate_pod, validate_pod_update

JSON = dict[str, Any]


def pod(**spec: Any) -> JSON:
    spec.setdefault("containers", [{"name": "c", "image": "busybox"}])
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "spec": spec}


def errors(obj: JSON) -> list[str]:
    return [str(e) for e in validate_pod(obj)]


def test_a_minimal_pod_is_valid() -> None:
    assert errors(pod()) == []
    full = pod(
        restartPolicy="OnFailure", dnsPolicy="None", nodeName="node-1", hostname="h",
        subdomain="s", serviceAccountName="default", activeDeadlineSeconds=30,
        nodeSelector={"kubernetes.io/os": "linux"},
        volumes=[{"name": "data", "emptyDir": {}}],
        containers=[{
            "name": "c", "image": "busybox", "imagePullPolicy": "IfNotPresent",
            "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            "resources": {"requests": {"cpu": "500m", "memory": "1Gi"},
                          "limits": {"cpu": "1", "memory": "1024Mi"}},
        }],
        initContainers=[{"name": "init", "image": "busybox"}],
    )  # fmt: skip
    assert errors(full) == []


def test_containers_are_required() -> None:
    nocont = {"metadata": {"name": "nocont", "namespace": "ns"}, "spec": {}}
    assert errors(nocont) == ["spec.containers: Required value"]
    assert errors(pod(containers=[])) == ["spec.containers: Required value"]


def test_container_names_images_and_uniqueness() -> None:
    containers = [
        {"image": "i"},
        {"name": "Bad_Name", "image": "i"},
        {"name": "dup", "image": "i"},
        {"name": "dup"},
    ]
    assert errors(pod(containers=containers, initContainers=[{"name": "dup", "image": "i"}])) == [
        "spec.containers[0].name: Required value",
        'spec.containers[1].name: Invalid value: "Bad_Name": a lowercase RFC 1123 label must '
        "consist of lower case alphanumeric characters or '-', and must start and end with an "
        "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        "spec.containers[3].image: Required value",
        'spec.containers[3].name: Duplicate value: "dup"',
        'spec.initContainers[0].name: Duplicate value: "dup"',
    ]


def test_container_ports() -> None:
    ports = [
        {"containerPort": 0},
        {"containerPort": 65536, "hostPort": -1, "protocol": "tcp"},
        {"name": "web", "containerPort": 80},
        {"name": "web", "containerPort": 81},
        {"name": "-bad", "containerPort": 82},
    ]
    assert errors(pod(containers=[{"name": "c", "image": "i", "ports": ports}])) == [
        "spec.containers[0].ports[0].containerPort: Required value",
        "spec.containers[0].ports[1].containerPort: Invalid value: 65536: must be between 1 and "
        "65535, inclusive",
        "spec.containers[0].ports[1].hostPort: Invalid value: -1: must be between 1 and 65535, "
        "inclusive",
        'spec.containers[0].ports[1].protocol: Unsupported value: "tcp": supported values: '
        '"SCTP", "TCP", "UDP"',
        'spec.containers[0].ports[3].name: Duplicate value: "web"',
        'spec.containers[0].ports[4].name: Invalid value: "-bad": must not begin or end with a '
        "hyphen",
    ]


def test_policies_and_references() -> None:
    bad = pod(
        restartPolicy="Sometimes", dnsPolicy="Cluster", activeDeadlineSeconds=0,
        nodeName="Node_1", hostname="a.b",
        containers=[{"name": "c", "image": "i", "imagePullPolicy": "Maybe",
                     "terminationMessagePolicy": "Later", "restartPolicy": "Always"}],
    )  # fmt: skip
    assert errors(bad) == [
        'spec.containers[0].terminationMessagePolicy: Unsupported value: "Later": supported '
        'values: "File", "FallbackToLogsOnError"',
        'spec.containers[0].imagePullPolicy: Unsupported value: "Maybe": supported values: '
        '"Always", "IfNotPresent", "Never"',
        "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
        'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
        '"OnFailure", "Never"',
        'spec.dnsPolicy: Unsupported value: "Cluster": supported values: '
        '"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"',
        'spec.nodeName: Invalid value: "Node_1": a lowercase RFC 1123 subdomain must consist of '
        "lower case alphanumeric characters, '-' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive",
        'spec.hostname: Invalid value: "a.b": must not contain dots',
    ]


def test_init_containers_without_restart_always_take_no_probes() -> None:
    init = {"name": "i", "image": "i", "livenessProbe": {"exec": {"command": ["x"]}}}
    assert errors(pod(initContainers=[init])) == [
        "spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers "
        "without restartPolicy=Always"
    ]
    assert errors(pod(initContainers=[{**init, "restartPolicy": "Always"}])) == []


def test_volumes_and_mounts() -> None:
    volumes = [
        {"name": "a", "emptyDir": {}},
        {"name": "a", "emptyDir": {}},
        {"name": "b"},  # no type: an emptyDir, as v1 defaulting makes it
        {"name": "c", "emptyDir": {}, "hostPath": {"path": "/x"}},
    ]
    mounts = [{"name": "a", "mountPath": "/a"}, {"name": "zz", "mountPath": "/a"}]
    obj = pod(volumes=volumes, containers=[{"name": "c", "image": "i", "volumeMounts": mounts}])
    assert errors(obj) == [
        'spec.volumes[1].name: Duplicate value: "a"',
        "spec.volumes[3].hostPath: Forbidden: may not specify more than 1 volume type",
        'spec.containers[0].volumeMounts[1].name: Not found: "zz"',
        'spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/a": must be unique',
    ]


def test_resources() -> None:
    resources = {
        "requests": {"cpu": "2", "memory": "2Gi", "example.com/gpu": "1", "foo": "1"},
        "limits": {"cpu": "1000m", "memory": "1Gi", "example.com/gpu": "2"},
    }
    obj = pod(containers=[{"name": "c", "image": "i", "resources": resources}])
    assert errors(obj) == [
        'spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal '
        "to cpu limit of 1",
        'spec.containers[0].resources.requests: Invalid value: "1": must be equal to '
        "example.com/gpu limit of 2",
        "spec.containers[0].resources.requests[foo]: Invalid value: foo: must be a standard "
        "resource type or fully qualified",
        "spec.containers[0].resources.requests[foo]: Invalid value: foo: must be a standard "
        "resource for containers",
        'spec.containers[0].resources.requests: Invalid value: "2Gi": must be less than or equal '
        "to memory limit of 1Gi",
    ]


def test_env_probes_and_tolerations() -> None:
    ctr = {
        "name": "c",
        "image": " i",
        "env": [{"name": "A=B"}, {"value": "x"}, {"name": "ok.name-1"}],
        "livenessProbe": {"successThreshold": 2, "periodSeconds": -1},
        "readinessProbe": {"httpGet": {"port": 0, "scheme": "FTP"}, "exec": {"command": ["x"]},
                           "terminationGracePeriodSeconds": 5},
        "lifecycle": {"preStop": {"exec": {}}},
    }  # fmt: skip
    tolerations = [
        {"operator": "Equal", "value": "x"},
        {"key": "k", "operator": "Exists", "value": "v", "tolerationSeconds": 3},
        {"key": "k", "operator": "Near", "effect": "Later"},
    ]
    assert errors(pod(containers=[ctr], tolerations=tolerations)) == [
        'spec.containers[0].env[0].name: Invalid value: "A=B": a valid environment variable '
        "name must consist only of printable ASCII characters other than '='",
        "spec.containers[0].env[1].name: Required value",
        "spec.containers[0].lifecycle.preStop.exec.command: Required value",
        "spec.containers[0].livenessProbe: Required value: must specify a handler type",
        "spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than "
        "or equal to 0",
        "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
        "spec.containers[0].readinessProbe.httpGet: Forbidden: may not specify more than 1 "
        "handler type",
        "spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must "
        "not be set for readinessProbes",
        'spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when '
        '`key` is empty, which means "match all values and all keys"',
        "spec.tolerations[1].effect: Invalid value: \"\": effect must be 'NoExecute' when "
        "`tolerationSeconds` is set",
        'spec.tolerations[1].operator: Invalid value: "v": value must be empty when `operator` '
        "is 'Exists'",
        'spec.tolerations[2].operator: Unsupported value: "Near": supported values: "Equal", '
        '"Exists"',
        'spec.tolerations[2].effect: Unsupported value: "Later": supported values: '
        '"NoSchedule", "PreferNoSchedule", "NoExecute"',
        'spec.containers[0].image: Invalid value: " i": must not have leading or trailing '
        "whitespace",
    ]


def test_ephemeral_containers_and_gated_node_name_on_create() -> None:
    obj = pod(ephemeralContainers=[{"name": "e", "image": "i"}], nodeName="n",
              schedulingGates=[{"name": "g"}])  # fmt: skip
    assert errors(obj) == [
        "spec.ephemeralContainers: Forbidden: cannot be set on create",
        "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared",
    ]


# ---------------------------------------------------------------------- update

FORBIDDEN_PREFIX = (
    "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)\n"
)


def update_errors(new: JSON, old: JSON) -> list[str]:
    return [str(e) for e in validate_pod_update(new, old)]


def changed(old: JSON, **spec: Any) -> JSON:
    new = copy.deepcopy(old)
    new["spec"].update(spec)
    return new


def test_update_may_change_images_deadline_and_add_tolerations() -> None:
    old = pod(activeDeadlineSeconds=60, tolerations=[{"key": "a", "operator": "Exists"}])
    new = changed(
        old,
        containers=[{"name": "c", "image": "busybox:2"}],
        activeDeadlineSeconds=30,
        tolerations=[{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}],
    )
    assert update_errors(new, old) == []  # fmt: skip


def test_update_of_other_fields_is_forbidden() -> None:
    old = pod()
    errs = update_errors(changed(old, nodeName="elsewhere"), old)
    assert len(errs) == 1 and errs[0].startswith(FORBIDDEN_PREFIX)
    assert '+ \tNodeName: "elsewhere",' in errs[0]


def test_update_container_count_image_and_deadline_rules() -> None:
    old = pod(activeDeadlineSeconds=60)
    two = [{"name": "c", "image": "i"}, {"name": "d", "image": "i"}]
    assert update_errors(changed(old, containers=two), old) == [
        "spec.containers: Forbidden: pod updates may not add or remove containers"
    ]
    # reported by the pod-only create rules and by the container update rules alike
    assert (
        update_errors(changed(old, containers=[{"name": "c", "image": " i"}]), old)
        == [
            'spec.containers[0].image: Invalid value: " i": must not have leading or trailing '
            "whitespace"
        ]
        * 2
    )
    assert update_errors(changed(old, activeDeadlineSeconds=120), old) == [
        "spec.activeDeadlineSeconds: Invalid value: 120: must be less than or equal to "
        "previous value"
    ]
    dropped = copy.deepcopy(old)
    del dropped["spec"]["activeDeadlineSeconds"]
    assert update_errors(dropped, old) == [
        'spec.activeDeadlineSeconds: Invalid value: "null": must not update from a positive '
        "integer to nil value"
    ]


def test_update_may_not_modify_existing_tolerations() -> None:
    toleration = {"key": "a", "operator": "Exists", "effect": "NoExecute"}
    old = pod(tolerations=[{**toleration, "tolerationSeconds": 5}])
    ok = changed(old, tolerations=[{**toleration, "tolerationSeconds": 9}])
    assert update_errors(ok, old) == []
    bad = changed(old, tolerations=[{"key": "b", "operator": "Exists"}])
    assert update_errors(bad, old) == [
        "spec.tolerations: Forbidden: existing toleration can not be modified except its "
        "tolerationSeconds"
    ]


def test_update_negative_grace_period_may_become_one() -> None:
    old = pod(terminationGracePeriodSeconds=-1)
    assert update_errors(changed(old, terminationGracePeriodSeconds=1), old) == []
    assert update_errors(changed(old, terminationGracePeriodSeconds=2), old)[0].startswith(
        FORBIDDEN_PREFIX
    )


def test_update_treats_defaulted_fields_as_their_defaults() -> None:
    # kube compares defaulted objects; a client that sends the default explicitly
    # changes nothing
    old = pod()
    new = changed(
        old,
        restartPolicy="Always",
        dnsPolicy="ClusterFirst",
        terminationGracePeriodSeconds=30,
        schedulerName="default-scheduler",
    )
    assert update_errors(new, old) == []  # fmt: skip


def test_update_check_leaves_both_pods_as_they_were() -> None:
    """The update check defaults both specs sharing their values (no deep copies):
    neither pod it was given changes, even when the image rule writes the old image
    into its comparison copy."""
    old = pod(tolerations=[{"key": "a", "operator": "Exists"}])
    old["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    new = changed(old, nodeName="elsewhere", containers=[
        {"name": "c", "image": "busybox:2", "ports": [{"containerPort": 80}]}])  # fmt: skip
    before = copy.deepcopy((new, old))
    assert len(update_errors(new, old)) == 1
    assert (new, old) == before
