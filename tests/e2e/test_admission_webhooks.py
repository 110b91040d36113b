"""Admission webhooks end to end: a real HTTPS webhook process (lab/admission_webhook.py)
that denies, mutates, warns, answers slowly or with garbage, and is stopped; the real
kubectl and the official Python client see kube-apiserver's answers (the messages were
taken from a kube-apiserver with the same webhook)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from lab.admission_webhook import DENY_MESSAGE, MUTATED_LABEL, ca_bundle, generate_pki
from lab.etcd import free_port
from tests.e2e.admission_support import eventually
from tests.e2e.conftest import KUBECTL
from tests.integration.conftest import REPO, ServerProcess

pytestmark = pytest.mark.etcd

NS = "webhooks"


class Webhook:
    """One webhook process on 127.0.0.1:``port``, stopped by PID."""

    def __init__(self, pki: Path, slow: float = 5.0) -> None:
        self.ca, cert, key = pki / "ca.crt", pki / "tls.crt", pki / "tls.key"
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lab.admission_webhook", f"--port={self.port}",
             f"--cert={cert}", f"--key={key}", f"--slow={slow}"],
            cwd=REPO, start_new_session=True, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("the webhook did not start")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("webhook-pki")
    generate_pki(directory, (f"admission-demo.{NS}.svc",))
    return directory


@pytest.fixture(scope="module")
def webhook(pki: Path) -> Iterator[Webhook]:
    hook = Webhook(pki)
    yield hook
    hook.stop()


@pytest.fixture(scope="module")
def api(e2e_server: ServerProcess) -> Iterator[client.ApiClient]:
    with client.ApiClient(client.Configuration(host=e2e_server.url)) as api_client:
        core = client.CoreV1Api(api_client)
        core.create_namespace(client.V1Namespace(
            metadata=client.V1ObjectMeta(name=NS, labels={"webhook-tests": "yes"})))
        yield api_client


def _configure(api: client.ApiClient, kind: str, name: str, client_config: dict[str, Any],
               **extra: Any) -> None:
    """A one-webhook configuration for ConfigMaps labelled ``hook=<name>`` in NS."""
    hook = {
        "name": f"{name}.webhooks.test", "clientConfig": client_config,
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                   "resources": ["configmaps"]}],
        "sideEffects": "None", "admissionReviewVersions": ["v1"], "timeoutSeconds": 2,
        "namespaceSelector": {"matchLabels": {"webhook-tests": "yes"}},
        "objectSelector": {"matchLabels": {"hook": name}}, **extra,
    }
    body: Any = {"apiVersion": "admissionregistration.k8s.io/v1",
                 "kind": f"{kind}WebhookConfiguration", "metadata": {"name": name},
                 "webhooks": [hook]}
    api_group = client.AdmissionregistrationV1Api(api)
    if kind == "Mutating":
        api_group.create_mutating_webhook_configuration(body)
    else:
        api_group.create_validating_webhook_configuration(body)


def _url(hook: Webhook, path: str) -> dict[str, Any]:
    return {"url": f"https://127.0.0.1:{hook.port}{path}", "caBundle": ca_bundle(hook.ca)}


def _configmap(name: str, hook: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels={"hook": hook}))


def _create_fails(api: client.ApiClient, name: str, hook: str, **kwargs: Any) -> ApiException:
    core = client.CoreV1Api(api)

    def attempt() -> ApiException:
        try:
            core.create_namespaced_config_map(NS, _configmap(name, hook), **kwargs)
        except ApiException as e:
            return e
        core.delete_namespaced_config_map(name, NS)
        raise AssertionError("created")

    result: ApiException = eventually(attempt)
    return result


def _message(e: ApiException) -> str:
    return str(json.loads(e.body or "{}")["message"])


def test_denial_with_kubectl(api: client.ApiClient, webhook: Webhook, e2e_server: ServerProcess,
                             kubeconfig: Path) -> None:
    _configure(api, "Validating", "deny", _url(webhook, "/deny"))
    manifest = (f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: denied\n  namespace: {NS}\n"
                "  labels: {hook: deny}\n")

    def attempt() -> str:
        out = subprocess.run([str(KUBECTL), f"--kubeconfig={kubeconfig}", "create", "-f", "-"],
                             input=manifest, capture_output=True, text=True, timeout=60)
        assert out.returncode != 0, out.stdout
        return out.stderr

    stderr = eventually(attempt)
    assert ('Error from server (Forbidden): error when creating "STDIN": admission webhook '
            f'"deny.webhooks.test" denied the request: {DENY_MESSAGE}') in stderr


def test_denial_without_a_code_is_400(api: client.ApiClient, webhook: Webhook) -> None:
    _configure(api, "Validating", "denync", _url(webhook, "/deny-nocode"))
    e = _create_fails(api, "denied-nc", "denync")
    assert e.status == 400
    assert _message(e) == (
        f'admission webhook "denync.webhooks.test" denied the request: {DENY_MESSAGE}')


def test_mutation_warning_and_annotation(api: client.ApiClient, webhook: Webhook,
                                         kubeconfig: Path) -> None:
    _configure(api, "Mutating", "mutate", _url(webhook, "/mutate"))
    core = client.CoreV1Api(api)

    def attempt() -> Any:
        created: Any = core.create_namespaced_config_map(
            NS, _configmap(f"m{time.monotonic_ns()}", "mutate"))
        assert created.metadata.labels.get(MUTATED_LABEL) == "true", created.metadata.labels
        return created

    eventually(attempt)
    _configure(api, "Validating", "allow", _url(webhook, "/allow"))
    manifest = (f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: warned\n  namespace: {NS}\n"
                "  labels: {hook: allow}\n")

    def warned() -> str:
        subprocess.run([str(KUBECTL), f"--kubeconfig={kubeconfig}", "delete", "-n", NS,
                        "configmap", "warned", "--ignore-not-found"], capture_output=True,
                       timeout=60, check=True)
        out = subprocess.run([str(KUBECTL), f"--kubeconfig={kubeconfig}", "create", "-f", "-"],
                             input=manifest, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert "Warning: admission-demo: looked at this object" in out.stderr, out.stderr
        return out.stderr

    eventually(warned)


def test_slow_webhook_fails_at_its_timeout(api: client.ApiClient, webhook: Webhook) -> None:
    _configure(api, "Validating", "slow", _url(webhook, "/slow"), timeoutSeconds=1)
    started = time.monotonic()
    e = _create_fails(api, "slowed", "slow")
    assert e.status == 500
    assert _message(e) == (
        'Internal error occurred: failed calling webhook "slow.webhooks.test": failed to call '
        f'webhook: Post "https://127.0.0.1:{webhook.port}/slow?timeout=1s": context deadline '
        "exceeded")
    # the webhook answers after 5 s: the request ended at the webhook's timeout instead
    assert time.monotonic() - started < 5


def test_garbage_answer_fails_closed(api: client.ApiClient, webhook: Webhook) -> None:
    _configure(api, "Validating", "garbage", _url(webhook, "/garbage"))
    e = _create_fails(api, "garbaged", "garbage")
    assert e.status == 500
    assert _message(e) == (
        'Internal error occurred: failed calling webhook "garbage.webhooks.test": failed to call '
        "webhook: couldn't get version/kind; json parse error: invalid character '<' looking for "
        "beginning of value")


def test_stopped_webhook_fail_and_ignore(api: client.ApiClient, pki: Path) -> None:
    hook = Webhook(pki)
    _configure(api, "Validating", "stopped", _url(hook, "/allow"))
    _configure(api, "Validating", "stopped-ign", _url(hook, "/deny"), failurePolicy="Ignore")
    core = client.CoreV1Api(api)
    _create_fails(api, "while-up", "stopped-ign")  # up: the Ignore hook denies
    hook.stop()
    e = _create_fails(api, "while-down", "stopped")
    assert e.status == 500
    assert _message(e) == (
        'Internal error occurred: failed calling webhook "stopped.webhooks.test": failed to call '
        f'webhook: Post "https://127.0.0.1:{hook.port}/allow?timeout=2s": dial tcp '
        f"127.0.0.1:{hook.port}: connect: connection refused")
    created: Any = core.create_namespaced_config_map(NS, _configmap("ignored", "stopped-ign"))
    assert created.metadata.name == "ignored"  # down and failurePolicy Ignore: admitted


def test_side_effects_other_than_none_are_refused(api: client.ApiClient, webhook: Webhook) -> None:
    """Upstream (v1): a webhook with side effects cannot be configured at all, so a
    dry run never meets one (the dispatcher's "does not support dry run" is left for
    configurations written to etcd by other means)."""
    with pytest.raises(client.ApiException) as exc:
        _configure(api, "Validating", "effects", _url(webhook, "/allow"), sideEffects="Some")
    assert exc.value.status == 422
    assert _message(exc.value) == (
        'ValidatingWebhookConfiguration.admissionregistration.k8s.io "effects" is invalid: '
        'webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", '
        '"NoneOnDryRun"'
    )


def test_service_reference_through_endpoints(api: client.ApiClient, webhook: Webhook) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_service(NS, client.V1Service(
        metadata=client.V1ObjectMeta(name="admission-demo"),
        spec=client.V1ServiceSpec(ports=[client.V1ServicePort(port=443, target_port=8443)])))
    core.create_namespaced_endpoints(NS, client.V1Endpoints(
        metadata=client.V1ObjectMeta(name="admission-demo"),
        subsets=[client.V1EndpointSubset(addresses=[client.V1EndpointAddress(ip="127.0.0.1")],
                                         ports=[client.CoreV1EndpointPort(port=webhook.port)])]))
    service = {"service": {"namespace": NS, "name": "admission-demo", "path": "/deny"},
               "caBundle": ca_bundle(webhook.ca)}
    _configure(api, "Validating", "svc", service)
    e = _create_fails(api, "via-service", "svc")
    assert e.status == 403
    assert _message(e) == (
        f'admission webhook "svc.webhooks.test" denied the request: {DENY_MESSAGE}')


def test_scale_subresource_is_admitted(api: client.ApiClient, webhook: Webhook,
                                       kubeconfig: Path) -> None:
    rules = [{"operations": ["UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"],
              "resources": ["deployments/scale"]}]
    _configure(api, "Validating", "scale", _url(webhook, "/deny"), rules=rules,
               objectSelector={})
    labels = {"app": "scaled"}
    client.AppsV1Api(api).create_namespaced_deployment(NS, client.V1Deployment(
        metadata=client.V1ObjectMeta(name="scaled"), spec=client.V1DeploymentSpec(
            replicas=1, selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="x")])))))

    def attempt() -> str:
        out = subprocess.run([str(KUBECTL), f"--kubeconfig={kubeconfig}", "scale", "-n", NS,
                              "deployment/scaled", "--replicas=3"], capture_output=True,
                             text=True, timeout=60)
        assert out.returncode != 0, out.stdout
        return out.stderr

    assert ('admission webhook "scale.webhooks.test" denied the request: '
            f"{DENY_MESSAGE}") in eventually(attempt)


def test_match_conditions_choose_the_calls(api: client.ApiClient, webhook: Webhook) -> None:
    conditions = [{"name": "prefixed", "expression": "object.metadata.name.startsWith('no-')"}]
    _configure(api, "Validating", "cond", _url(webhook, "/deny"), matchConditions=conditions)
    e = _create_fails(api, "no-thanks", "cond")
    assert _message(e) == (
        f'admission webhook "cond.webhooks.test" denied the request: {DENY_MESSAGE}')
    core = client.CoreV1Api(api)
    created: Any = core.create_namespaced_config_map(NS, _configmap("yes-please", "cond"))
    assert created.metadata.name == "yes-please"  # the condition is false: not called
    broken = [{"name": "broken", "expression": "object.nosuch == 1"}]
    _configure(api, "Validating", "condbroken", _url(webhook, "/allow"), matchConditions=broken)
    e = _create_fails(api, "broken", "condbroken")
    assert e.status == 500
    assert _message(e).startswith(
        'Internal error occurred: failed calling webhook "condbroken.webhooks.test": failed to '
        "evaluate match conditions: broken: ")


def test_webhook_configurations_are_never_sent_to_webhooks(
    api: client.ApiClient, webhook: Webhook
) -> None:
    """Upstream's IsExemptAdmissionConfigurationResource (the conformance spec 'should
    not be able to mutate or prevent deletion of webhook configuration objects'): a
    webhook that denies every write of every resource cannot block the creation or the
    deletion of webhook configurations, so it can always be removed."""
    hook: Any = {"name": "deny-all.webhooks.test", "clientConfig": _url(webhook, "/deny"),
            "rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"],
                       "resources": ["*/*"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"], "timeoutSeconds": 2,
            "objectSelector": {"matchLabels": {"hook": "deny-all"}}}  # fmt: skip
    group = client.AdmissionregistrationV1Api(api)
    deny_all: Any = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "deny-all"}, "webhooks": [hook]}  # fmt: skip
    group.create_validating_webhook_configuration(deny_all)
    try:
        denied = _create_fails(api, "guarded", "deny-all")  # live: it denies a ConfigMap
        assert "denied the request" in _message(denied)
        labelled = {"name": "guarded", "labels": {"hook": "deny-all"}}
        for kind in ("Validating", "Mutating"):
            body: Any = {"apiVersion": "admissionregistration.k8s.io/v1",
                         "kind": f"{kind}WebhookConfiguration", "metadata": labelled,
                         "webhooks": [{**hook, "name": "other.webhooks.test"}]}  # fmt: skip
            if kind == "Mutating":
                group.create_mutating_webhook_configuration(body)
                group.delete_mutating_webhook_configuration("guarded")
            else:
                group.create_validating_webhook_configuration(body)
                group.delete_validating_webhook_configuration("guarded")
    finally:
        group.delete_validating_webhook_configuration("deny-all")
