"""ValidatingAdmissionPolicy and PodSecurity end to end, with the real kubectl and the
official Python client, cached and uncached. The expected texts are kube-apiserver's
answers to the same objects."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.e2e.admission_support import eventually
from tests.e2e.conftest import KUBECTL
from tests.integration.conftest import ServerProcess

pytestmark = pytest.mark.etcd

POLICY = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: replicas}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules: [{apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE],
                     resources: [deployments]}]
  variables: [{name: limit, expression: "int(params.data.max)"}]
  validations:
  - expression: "object.spec.replicas <= variables.limit"
    messageExpression: >-
      'replicas ' + string(object.spec.replicas) + ' > ' + string(variables.limit)
    reason: Forbidden
  - expression: "object.metadata.name != 'plain'"
  - expression: "object.metadata.name != 'err' || object.spec.nosuch == 1"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: replicas-deny}
spec:
  policyName: replicas
  validationActions: [Deny]
  paramRef: {name: replica-limit, namespace: vap, parameterNotFoundAction: Deny}
  matchResources: {namespaceSelector: {matchLabels: {vap: deny}}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: replicas-warn}
spec:
  policyName: replicas
  validationActions: [Warn]
  paramRef: {name: replica-limit, namespace: vap, parameterNotFoundAction: Allow}
  matchResources: {namespaceSelector: {matchLabels: {vap: warn}}}
"""
PREFIX = "ValidatingAdmissionPolicy 'replicas' with binding 'replicas-deny' denied request: "


def _kubectl(
    kubeconfig: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(KUBECTL), f"--kubeconfig={kubeconfig}", *args], input=stdin,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def api(e2e_server: ServerProcess) -> Iterator[client.ApiClient]:
    with client.ApiClient(client.Configuration(host=e2e_server.url)) as api_client:
        yield api_client


def _deployment(name: str, replicas: int) -> client.V1Deployment:
    labels = {"app": name}
    return client.V1Deployment(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1DeploymentSpec(
            replicas=replicas, selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="x")]))))


def test_validating_policy(api: client.ApiClient, kubeconfig: Path) -> None:
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    for name, mode in (("vap", "deny"), ("vap-warn", "warn")):
        core.create_namespace(client.V1Namespace(
            metadata=client.V1ObjectMeta(name=name, labels={"vap": mode})))
    assert _kubectl(kubeconfig, "apply", "-f", "-", stdin=POLICY).returncode == 0

    def no_params() -> ApiException:
        try:
            apps.create_namespaced_deployment("vap", _deployment("d1", 1), dry_run="All")
        except ApiException as e:
            return e
        raise AssertionError("admitted")

    e = eventually(no_params)
    assert (e.status, json.loads(e.body or "{}")["message"]) == (422, (
        f'deployments.apps "d1" is forbidden: {PREFIX}failed to configure binding: no params '
        "found for policy binding with `Deny` parameterNotFoundAction"))
    core.create_namespaced_config_map("vap", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="replica-limit"), data={"max": "5"}))

    def denied(name: str, replicas: int) -> tuple[int, dict[str, Any]]:
        def attempt() -> tuple[int, dict[str, Any]]:
            try:
                apps.create_namespaced_deployment("vap", _deployment(name, replicas),
                                                  dry_run="All")
            except ApiException as e:
                body = json.loads(e.body or "{}")
                assert "failed to configure binding" not in body["message"]
                return e.status, body
            raise AssertionError("admitted")
        result: tuple[int, dict[str, Any]] = eventually(attempt)
        return result

    code, body = denied("d1", 7)
    assert (code, body["reason"], body["message"]) == (
        403, "Forbidden", f'deployments.apps "d1" is forbidden: {PREFIX}replicas 7 > 5')
    assert body["details"] == {"name": "d1", "group": "apps", "kind": "deployments",
                               "causes": [{"message": f"{PREFIX}replicas 7 > 5"}]}
    code, body = denied("plain", 1)
    assert (code, body["reason"], body["message"]) == (
        422, "Invalid", f'deployments.apps "plain" is forbidden: {PREFIX}failed expression: '
        "object.metadata.name != 'plain'")
    code, body = denied("err", 1)
    assert body["message"] == (
        f"deployments.apps \"err\" is forbidden: {PREFIX}expression 'object.metadata.name != "
        "'err' || object.spec.nosuch == 1' resulted in error: no such key: nosuch")
    assert apps.create_namespaced_deployment("vap", _deployment("ok", 2)).metadata is not None
    out = _kubectl(kubeconfig, "create", "deployment", "d1", "--image=x", "--replicas=7",
                   "-n", "vap-warn")
    assert out.returncode == 0, out.stderr
    assert ("Warning: Validation failed for ValidatingAdmissionPolicy 'replicas' with binding "
            "'replicas-warn': replicas 7 > 5") in out.stderr


PRIVILEGED_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: wild, namespace: psa}
spec:
  hostNetwork: true
  containers:
  - {name: c, image: busybox, securityContext: {privileged: true}}
"""


def test_pod_security_warns_then_rejects(api: client.ApiClient, kubeconfig: Path) -> None:
    core = client.CoreV1Api(api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(
        name="psa", labels={"pod-security.kubernetes.io/warn": "baseline"})))
    out = _kubectl(kubeconfig, "create", "-f", "-", stdin=PRIVILEGED_POD)
    violations = ('host namespaces (hostNetwork=true), privileged (container "c" must not set '
                  "securityContext.privileged=true)")
    assert out.returncode == 0, out.stderr
    assert f'Warning: would violate PodSecurity "baseline:latest": {violations}' in out.stderr
    out = _kubectl(kubeconfig, "label", "ns", "psa", "pod-security.kubernetes.io/enforce=baseline")
    assert out.returncode == 0, out.stderr
    assert ('Warning: existing pods in namespace "psa" violate the new PodSecurity enforce level '
            '"baseline:latest"') in out.stderr
    assert "Warning: wild: host namespaces, privileged" in out.stderr
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_pod("psa", client.V1Pod(
            metadata=client.V1ObjectMeta(name="wild2"),
            spec=client.V1PodSpec(host_network=True, containers=[client.V1Container(
                name="c", image="busybox",
                security_context=client.V1SecurityContext(privileged=True))])))
    assert caught.value.status == 403
    assert json.loads(caught.value.body or "{}")["message"] == (
        f'pods "wild2" is forbidden: violates PodSecurity "baseline:latest": {violations}')
    generated = client.V1Pod(metadata=client.V1ObjectMeta(generate_name="wild-"),
                             spec=client.V1PodSpec(host_network=True, containers=[
                                 client.V1Container(name="c", image="busybox")]))
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_pod("psa", generated)
    message = json.loads(caught.value.body or "{}")["message"]
    assert re.fullmatch(r'pods "wild-[a-z0-9]{5}" is forbidden: violates PodSecurity '
                        r'"baseline:latest": host namespaces \(hostNetwork=true\)', message)
    out = _kubectl(kubeconfig, "label", "ns", "psa", "--overwrite",
                   "pod-security.kubernetes.io/enforce=bogus")
    assert out.returncode != 0
    assert ('The Namespace "psa" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]:'
            ' Invalid value: "bogus": must be one of privileged, baseline, restricted'
            ) in out.stderr


MUTATING_POLICY = """\
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: owner}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE],
                     resources: [configmaps]}]
  variables: [{name: owner, expression: "'team-' + object.metadata.name"}]
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'owner': variables.owner}}}"
  - patchType: JSONPatch
    jsonPatch:
      expression: "[JSONPatch{op: 'add', path: '/data/added', value: 'yes'}]"
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: owner}
spec:
  policyName: owner
  matchResources: {namespaceSelector: {matchLabels: {map: "yes"}}}
"""


def test_mutating_policy(api: client.ApiClient, kubeconfig: Path) -> None:
    core = client.CoreV1Api(api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(
        name="map", labels={"map": "yes"})))
    assert _kubectl(kubeconfig, "apply", "-f", "-", stdin=MUTATING_POLICY).returncode == 0

    def attempt() -> Any:
        name = f"c{time.monotonic_ns()}"
        created: Any = core.create_namespaced_config_map("map", client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name=name), data={"k": "v"}))
        assert created.metadata.labels == {"owner": f"team-{name}"}, created.metadata.labels
        return created

    created = eventually(attempt)
    assert created.data == {"k": "v", "added": "yes"}
