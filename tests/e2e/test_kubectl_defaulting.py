"""The real kubectl gets objects defaulted as kube-apiserver defaults them: what the
real kube-controller-manager needs (a Deployment's strategy, issue 26) and what
``kubectl debug`` needs (a pod's ``securityContext: {}``), whether the body came as
protobuf (``kubectl create``), JSON (``kubectl create -f``), a patch or an apply."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.test_kubectl import kubectl

pytestmark = pytest.mark.etcd

_ROLLING = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
_POD_SPEC = {
    "dnsPolicy": "ClusterFirst",
    "restartPolicy": "Always",
    "schedulerName": "default-scheduler",
    "securityContext": {},
    "terminationGracePeriodSeconds": 30,
}
_CONTAINER = {
    "name": "nginx",
    "image": "nginx",
    "imagePullPolicy": "Always",
    "resources": {},
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
}


def _get(kubeconfig: Path, *args: str) -> dict[str, object]:
    return json.loads(kubectl(kubeconfig, "get", *args, "-o", "json"))  # type: ignore[no-any-return]


def test_kubectl_create_deployment_is_defaulted(kubeconfig: Path) -> None:
    kubectl(kubeconfig, "create", "namespace", "dflt")
    out = kubectl(kubeconfig, "create", "deployment", "web", "--image=nginx", "-n", "dflt",
                  "-o", "json", "--show-managed-fields")  # fmt: skip
    created = json.loads(out)
    spec = created["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == _ROLLING
    assert spec["revisionHistoryLimit"] == 10 and spec["progressDeadlineSeconds"] == 600
    template = spec["template"]["spec"]
    assert {k: template[k] for k in _POD_SPEC} == _POD_SPEC
    assert template["containers"] == [_CONTAINER]
    assert "enableServiceLinks" not in template  # a Pod's default, never a template's
    # stored so: a read from etcd or the cache gives the same
    stored = _get(kubeconfig, "deployment", "web", "-n", "dflt")["spec"]
    assert stored["strategy"] == _ROLLING and stored["template"]["spec"] == template  # type: ignore[index]
    # the creator owns the defaulted fields, as kube's field manager records them
    owned = json.dumps(created["metadata"]["managedFields"][0]["fieldsV1"])
    assert '"f:strategy"' in owned and '"f:progressDeadlineSeconds"' in owned


def test_a_patch_result_is_defaulted(kubeconfig: Path) -> None:
    kubectl(kubeconfig, "create", "namespace", "dflt-patch")
    kubectl(kubeconfig, "create", "deployment", "web", "--image=nginx:1.27", "-n",
            "dflt-patch")  # fmt: skip
    recreate = '{"spec": {"strategy": {"type": "Recreate", "rollingUpdate": null}}}'
    kubectl(kubeconfig, "patch", "deployment", "web", "-n", "dflt-patch", "--type=merge",
            "-p", recreate)  # fmt: skip
    rolling = '{"spec": {"strategy": {"type": "RollingUpdate"}}}'
    kubectl(kubeconfig, "patch", "deployment", "web", "-n", "dflt-patch", "--type=merge",
            "-p", rolling)  # fmt: skip
    spec = _get(kubeconfig, "deployment", "web", "-n", "dflt-patch")["spec"]
    assert spec["strategy"] == _ROLLING  # type: ignore[index]


def test_kubectl_run_and_apply_are_defaulted(kubeconfig: Path) -> None:
    kubectl(kubeconfig, "create", "namespace", "dflt-run")
    kubectl(kubeconfig, "run", "p", "--image=nginx:1.27", "-n", "dflt-run")
    pod = _get(kubeconfig, "pod", "p", "-n", "dflt-run")
    spec = pod["spec"]
    assert spec["securityContext"] == {} and spec["enableServiceLinks"] is True  # type: ignore[index]
    assert spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"  # type: ignore[index]
    service = (
        "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: dflt-run}\n"
        "spec: {selector: {run: p}, ports: [{port: 80}]}\n"
    )
    kubectl(kubeconfig, "apply", "--server-side", "-f", "-", stdin=service)
    svc = _get(kubeconfig, "service", "s", "-n", "dflt-run")["spec"]
    assert svc["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]  # type: ignore[index]
    assert svc["type"] == "ClusterIP" and svc["sessionAffinity"] == "None"  # type: ignore[index]
