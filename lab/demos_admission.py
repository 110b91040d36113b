"""The lab's admission demos, over its plain port (as the lab's administrator):

- ``admission-webhook``: the lab starts a small HTTPS webhook of its own
  (``lab.admission_webhook``); a MutatingWebhookConfiguration makes it label the
  ConfigMaps it sees, a ValidatingWebhookConfiguration makes it deny others. The
  learner sees the mutated object and the denial message.
- ``validating-policy``: a ValidatingAdmissionPolicy whose CEL rule refuses a
  Deployment with more than 5 replicas; 10 are refused, 3 accepted.
- ``pod-security``: a privileged Pod in a namespace labelled ``warn=baseline`` is
  accepted with a Warning; labelled ``enforce=baseline``, the namespace warns about it
  and refuses the next one.

Each demo removes what it created (configurations, namespaces, the webhook process).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from lab.admission_webhook import DENY_MESSAGE, MUTATED_LABEL, ca_bundle, generate_pki
from lab.etcd import free_port

if TYPE_CHECKING:
    from lab.demo_context import DemoContext

__all__ = ["admission_webhook", "pod_security", "validating_policy"]

REG = "/apis/admissionregistration.k8s.io/v1"
WAIT_SECONDS = 15.0


async def _call(ctx: DemoContext, method: str, path: str,
                body: Any = None) -> tuple[int, Any, list[str]]:
    """(status, parsed body, Warning texts) of one request to the lab's server."""
    data = orjson.dumps(body) if body is not None else None
    kind = "application/merge-patch+json" if method == "PATCH" else "application/json"
    headers = {"Content-Type": kind} if data is not None else {}
    async with ctx.session.request(method, ctx.base + path, data=data, headers=headers) as r:
        raw = await r.read()
        warnings = [w.removeprefix('299 - "').removesuffix('"').replace('\\"', '"')
                    for w in r.headers.getall("Warning", [])]
        return r.status, (orjson.loads(raw) if raw else None), warnings


async def _until(attempt: Callable[[], Awaitable[tuple[int, Any, list[str]]]],
                 done: Callable[[int, Any], bool]) -> tuple[int, Any, list[str]]:
    """Retry ``attempt`` until ``done`` (configurations reach the server by a watch)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        result = await attempt()
        if done(result[0], result[1]) or time.monotonic() > deadline:
            return result
        await asyncio.sleep(0.2)


def _message(body: Any) -> str:
    return str(body.get("message", "")) if isinstance(body, dict) else str(body)


async def _namespace(ctx: DemoContext, name: str, labels: dict[str, str]) -> None:
    await _call(ctx, "DELETE", f"/api/v1/namespaces/{name}")
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:  # a previous run's namespace may still be going
        status, _, _ = await _call(ctx, "POST", "/api/v1/namespaces", {
            "metadata": {"name": name, "labels": labels}})
        if status == 201:
            return
        await asyncio.sleep(0.3)


async def _start_webhook(directory: Path) -> tuple[asyncio.subprocess.Process, int, Path]:
    ca, cert, key = generate_pki(directory)
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "lab.admission_webhook", f"--port={port}", f"--cert={cert}",
        f"--key={key}", start_new_session=True, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            break
        except OSError:
            await asyncio.sleep(0.1)
    return proc, port, ca


def _webhook_config(kind: str, name: str, url: str, ca: Path, hook: str) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": f"{kind}WebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [{
            "name": f"{hook}.lab.watchcache", "clientConfig": {"url": url,
                                                               "caBundle": ca_bundle(ca)},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": ["configmaps"]}],
            "objectSelector": {"matchLabels": {"admission-demo": hook}},
            "sideEffects": "None", "admissionReviewVersions": ["v1"], "timeoutSeconds": 5,
        }],
    }


async def admission_webhook(ctx: DemoContext) -> None:
    t = ctx.t
    t.title("a webhook of our own: it mutates one ConfigMap and denies another")
    ns = "admission-demo"
    configs = [("mutatingwebhookconfigurations", "lab-demo-mutate"),
               ("validatingwebhookconfigurations", "lab-demo-deny")]
    with tempfile.TemporaryDirectory(prefix="watchcache-webhook-") as tmp:
        proc, port, ca = await _start_webhook(Path(tmp))
        try:
            t.say(f"  webhook server started: https://127.0.0.1:{port} (pid {proc.pid})")
            await _namespace(ctx, ns, {})
            for (plural, name), kind, path, hook in zip(
                    configs, ("Mutating", "Validating"), ("/mutate", "/deny"),
                    ("mutate", "deny"), strict=True):  # fmt: skip
                url = f"https://127.0.0.1:{port}{path}"
                await _call(ctx, "DELETE", f"{REG}/{plural}/{name}")
                status, _, _ = await _call(ctx, "POST", f"{REG}/{plural}",
                                           _webhook_config(kind, name, url, ca, hook))
                t.say(f"  POST {plural}/{name} -> {status} (calls {url})")
            cms = f"/api/v1/namespaces/{ns}/configmaps"

            async def create(name: str, hook: str) -> tuple[int, Any, list[str]]:
                await _call(ctx, "DELETE", f"{cms}/{name}")
                return await _call(ctx, "POST", cms, {"metadata": {
                    "name": name, "labels": {"admission-demo": hook}}, "data": {"k": "v"}})

            status, body, _ = await _until(
                lambda: create("mutated", "mutate"),
                lambda s, b: s == 201 and MUTATED_LABEL in b["metadata"].get("labels", {}))
            labels = (body or {}).get("metadata", {}).get("labels", {})
            t.say(f"  POST configmaps/mutated -> {status}, labels {labels}")
            t.check("the mutating webhook's JSONPatch added a label",
                    labels.get(MUTATED_LABEL) == "true")
            status, body, _ = await _until(lambda: create("refused", "deny"),
                                           lambda s, b: s == 403)
            t.say(f"  POST configmaps/refused -> {status} {_message(body)}")
            t.check("the validating webhook's denial is upstream's 403 message", status == 403 and
                    _message(body) == 'admission webhook "deny.lab.watchcache" denied the '
                    f"request: {DENY_MESSAGE}")  # fmt: skip
            t.explain("kube-apiserver calls mutating webhooks one by one (their JSONPatch "
                      "changes the object), then validates, then calls validating webhooks "
                      "(in parallel); a denial ends the request")
        finally:
            for plural, name in configs:
                await _call(ctx, "DELETE", f"{REG}/{plural}/{name}")
            await _call(ctx, "DELETE", f"/api/v1/namespaces/{ns}")
            proc.terminate()
            await proc.wait()


REPLICAS_POLICY: dict[str, Any] = {
    "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "lab-demo-max-replicas"},
    "spec": {
        "failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": [{
            "apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
            "resources": ["deployments"]}]},
        "validations": [{
            "expression": "object.spec.replicas <= 5",
            "messageExpression": "'replicas must be no more than 5, not ' + "
                                 "string(object.spec.replicas)",
            "reason": "Invalid"}],
    },
}
REPLICAS_BINDING: dict[str, Any] = {
    "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
    "metadata": {"name": "lab-demo-max-replicas"},
    "spec": {"policyName": "lab-demo-max-replicas", "validationActions": ["Deny"],
             "matchResources": {"namespaceSelector": {"matchLabels": {
                 "admission-demo": "policy"}}}},
}


def _deployment(name: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "containers": [{"name": "app", "image": "nginx"}]}}}}


async def validating_policy(ctx: DemoContext) -> None:
    t = ctx.t
    t.title("a CEL rule refuses a Deployment with too many replicas")
    ns = "admission-policy-demo"
    try:
        await _namespace(ctx, ns, {"admission-demo": "policy"})
        for plural, body in (("validatingadmissionpolicies", REPLICAS_POLICY),
                             ("validatingadmissionpolicybindings", REPLICAS_BINDING)):
            await _call(ctx, "DELETE", f"{REG}/{plural}/{body['metadata']['name']}")
            status, _, _ = await _call(ctx, "POST", f"{REG}/{plural}", body)
            t.say(f"  POST {plural}/{body['metadata']['name']} -> {status}")
        t.say("  rule: object.spec.replicas <= 5")
        deployments = f"/apis/apps/v1/namespaces/{ns}/deployments"
        status, body, _ = await _until(
            lambda: _call(ctx, "POST", deployments, _deployment("big", 10)),
            lambda s, b: s == 422)
        t.say(f"  POST deployments/big (10 replicas) -> {status} {_message(body)}")
        t.check("10 replicas refused with the rule's message", status == 422 and _message(body) ==
                'deployments.apps "big" is forbidden: ValidatingAdmissionPolicy '
                "'lab-demo-max-replicas' with binding 'lab-demo-max-replicas' denied request: "
                "replicas must be no more than 5, not 10")  # fmt: skip
        status, _, _ = await _call(ctx, "POST", deployments, _deployment("small", 3))
        t.say(f"  POST deployments/small (3 replicas) -> {status}")
        t.check("3 replicas accepted", status == 201)
        t.explain("a ValidatingAdmissionPolicy runs CEL inside the API server: no webhook to "
                  "deploy; its binding chooses where it applies and what a failure does "
                  "(Deny, Warn, Audit)")
    finally:
        for plural in ("validatingadmissionpolicybindings", "validatingadmissionpolicies"):
            await _call(ctx, "DELETE", f"{REG}/{plural}/lab-demo-max-replicas")
        await _call(ctx, "DELETE", f"/api/v1/namespaces/{ns}")


def _privileged_pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "shell", "image": "busybox",
                                     "securityContext": {"privileged": True}}]}}


async def pod_security(ctx: DemoContext) -> None:
    t = ctx.t
    t.title("Pod Security: a privileged Pod warned, then rejected")
    ns = "pod-security-demo"
    level = "pod-security.kubernetes.io/"
    expected = ('would violate PodSecurity "baseline:latest": privileged (container "shell" '
                "must not set securityContext.privileged=true)")
    pods = f"/api/v1/namespaces/{ns}/pods"
    try:
        await _namespace(ctx, ns, {level + "warn": "baseline"})
        t.say(f"  namespace {ns} labelled {level}warn=baseline")
        status, _, warnings = await _call(ctx, "POST", pods, _privileged_pod("first"))
        t.say(f"  POST pods/first (privileged) -> {status}, Warning: {warnings}")
        t.check("warn: accepted with upstream's Warning", status == 201 and expected in warnings)
        status, _, warnings = await _call(ctx, "PATCH", f"/api/v1/namespaces/{ns}", {
            "metadata": {"labels": {level + "enforce": "baseline"}}})
        t.say(f"  label {level}enforce=baseline -> {status}, Warning: {warnings}")
        t.check("the namespace warns about the pod already there", status == 200 and
                'existing pods in namespace "pod-security-demo" violate the new PodSecurity '
                'enforce level "baseline:latest"' in warnings)  # fmt: skip
        status, body, _ = await _call(ctx, "POST", pods, _privileged_pod("second"))
        t.say(f"  POST pods/second (privileged) -> {status} {_message(body)}")
        t.check("enforce: refused with upstream's 403", status == 403 and _message(body) ==
                'pods "second" is forbidden: violates PodSecurity "baseline:latest": privileged '
                '(container "shell" must not set securityContext.privileged=true)')  # fmt: skip
        t.explain("PodSecurity reads the namespace's labels: warn and audit only report, "
                  "enforce refuses; existing pods are never removed")
    finally:
        await _call(ctx, "DELETE", f"/api/v1/namespaces/{ns}")

