"""The lab's API Priority and Fairness and audit demos, over its HTTPS port:

- ``apf``: a priority level and FlowSchema of the demo's own (8 queues, hands of 1,
  5 requests per queue) take the learner's and the token user's requests as two flows.
  The learner floods LISTs of every pod (each costs up to 10 seats by the list work
  estimator); the token user keeps sending GETs. The learner gets 429s, the token
  user none; the metrics show the queueing and the rejections. The objects are removed
  at the end.
- ``audit``: the trail of one request: a ConfigMap created by the admin, found in the
  lab's audit log (``<lab dir>/audit.log``) by the ``Audit-Id`` the response carried,
  at each stage; then a watch's RequestReceived / ResponseStarted / ResponseComplete.

``audit_flags`` gives the lab server its audit policy and log (the lab audits by
default: every request but the lab's own tooling, health, metrics and debug reads).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from lab.demos_auth import _pki, _session, _until
from lab.metrics import scrape
from lab.observe import request
from lab.pki import ADMIN, LEARNER, TOKEN_USER

if TYPE_CHECKING:
    from lab.demo_context import DemoContext

__all__ = ["LAB_AUDIT_POLICY", "apf", "audit", "audit_flags"]

LAB_AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
# the lab's own tooling (seeding, the simulated cluster, the page) on the plain port
- level: None
  users: ["system:unsecured"]
- level: None
  nonResourceURLs: ["/healthz*", "/livez*", "/readyz*", "/metrics", "/debug/*", "/openapi/*"]
# never log secret values
- level: Metadata
  resources: [{group: "", resources: ["secrets"]}]
- level: RequestResponse
  resources: [{group: "", resources: ["configmaps"]}]
- level: Metadata
"""

DEMO = "lab-apf-demo"
FC = "flowcontrol.apiserver.k8s.io"
RBAC = "rbac.authorization.k8s.io"


def audit_flags(lab_dir: Path) -> tuple[str, ...]:
    """Write the lab's audit policy and return the server flags that use it."""
    policy = lab_dir / "audit-policy.yaml"
    policy.write_text(LAB_AUDIT_POLICY)
    return (f"--audit-policy-file={policy}", f"--audit-log-path={lab_dir / 'audit.log'}",
            "--audit-log-maxsize=100", "--audit-log-maxbackup=3")  # fmt: skip


def _apf_objects() -> list[tuple[str, dict[str, Any]]]:
    level = {"apiVersion": f"{FC}/v1", "kind": "PriorityLevelConfiguration",
             "metadata": {"name": DEMO},
             "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1,
                      "limitResponse": {"type": "Queue", "queuing": {
                          "queues": 8, "handSize": 1, "queueLengthLimit": 5}}}}}  # fmt: skip
    subjects = [{"kind": "User", "user": {"name": LEARNER[0]}},
                {"kind": "User", "user": {"name": TOKEN_USER}}]  # fmt: skip
    schema = {"apiVersion": f"{FC}/v1", "kind": "FlowSchema", "metadata": {"name": DEMO},
              "spec": {"priorityLevelConfiguration": {"name": DEMO}, "matchingPrecedence": 500,
                       "distinguisherMethod": {"type": "ByUser"},
                       "rules": [{"subjects": subjects, "resourceRules": [{
                           "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                           "namespaces": ["*"], "clusterScope": True}]}]}}  # fmt: skip
    binding = {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": DEMO},
               "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"},
               "subjects": [{"apiGroup": RBAC, "kind": "User", "name": n}
                            for n in (LEARNER[0], TOKEN_USER)]}  # fmt: skip
    return [
        (f"/apis/{FC}/v1/prioritylevelconfigurations", level),
        (f"/apis/{FC}/v1/flowschemas", schema),
        (f"/apis/{RBAC}/v1/clusterrolebindings", binding),
    ]


async def apf(ctx: DemoContext) -> None:
    t = ctx.t
    pki = _pki(ctx)
    base = ctx.state.secure_url
    t.title("one flow floods: 429s for it only, the other flow keeps its latency")
    quiet_path = "/api/v1/namespaces/default"
    async with _session(pki, ADMIN[0]) as admin, _session(pki, LEARNER[0]) as learner, \
            _session(pki, None, pki.token) as quiet:  # fmt: skip
        for path, obj in _apf_objects():
            await request(admin, base, f"{path}/{DEMO}", method="DELETE")
            created = t.obs(await request(admin, base, path, method="POST", body=obj))
            t.check(f"created {obj['kind']} {DEMO}", created.status == 201, created.message)

        async def classified() -> bool:
            async with quiet.get(base + quiet_path) as r:
                return r.status == 200 and bool(r.headers.get("X-Kubernetes-PF-FlowSchema-UID"))

        await _until(classified)
        stop = asyncio.Event()
        flood: list[int] = []
        quiet_codes: list[int] = []
        quiet_ms: list[float] = []

        async def flooder() -> None:
            while not stop.is_set():
                async with learner.get(base + "/api/v1/pods?resourceVersion=0") as r:
                    await r.read()
                    flood.append(r.status)

        tasks = [asyncio.create_task(flooder()) for _ in range(40)]
        await asyncio.sleep(0.5)
        for _ in range(30):
            start = time.perf_counter()
            async with quiet.get(base + quiet_path) as r:
                await r.read()
                quiet_codes.append(r.status)
            quiet_ms.append((time.perf_counter() - start) * 1000)
        stop.set()
        await asyncio.gather(*tasks)
        rejected = flood.count(429)
        t.say(f"  learner (flood): {len(flood)} LISTs, {rejected} answered 429")
        t.say(f"  token-user (quiet): {len(quiet_codes)} GETs, codes {sorted(set(quiet_codes))}, "
              f"slowest {max(quiet_ms):.0f} ms")  # fmt: skip
        t.check("the flooding flow gets 429 Too Many Requests", rejected > 0)
        t.check(
            "the quiet flow is never rejected", set(quiet_codes) == {200}, str(set(quiet_codes))
        )
        m = await scrape(ctx.session, ctx.base)
        counted = m.value("apiserver_flowcontrol_rejected_requests_total", priority_level=DEMO)
        waits = m.value("apiserver_flowcontrol_request_wait_duration_seconds_count",
                        priority_level=DEMO)  # fmt: skip
        rejected_name = f"apiserver_flowcontrol_rejected_requests_total{{priority_level={DEMO}}}"
        t.say(f"  {rejected_name} = {counted:.0f}")
        t.say(f"  apiserver_flowcontrol_request_wait_duration_seconds_count = {waits:.0f}")
        t.check("the metrics count the rejections and the queue waits", counted > 0 and waits > 0)
        async with ctx.session.get(
            ctx.base + "/debug/api_priority_and_fairness/dump_priority_levels"
        ) as r:
            for line in (await r.text()).splitlines():
                if line.startswith(("PriorityLevelName", DEMO)):
                    t.say("  " + line)
        for path, _ in reversed(_apf_objects()):
            await request(admin, base, f"{path}/{DEMO}", method="DELETE")
    t.explain("API Priority and Fairness classifies each request by FlowSchema into a "
              "priority level; flows (here: per user) get their own queues by shuffle "
              "sharding and fair queuing serves them in turn, so one flow's flood fills "
              "its own queues (429) without starving the others.")  # fmt: skip


def _trail(log: Path, audit_id: str) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [e for e in map(orjson.loads, log.read_bytes().splitlines())
            if e.get("auditID") == audit_id]  # fmt: skip


async def _trail_of(log: Path, audit_id: str, stages: int) -> list[dict[str, Any]]:
    """The events of one request, once ``stages`` are written (the writer is async)."""

    async def written() -> bool:
        return len(_trail(log, audit_id)) >= stages

    await _until(written)
    return _trail(log, audit_id)


def _show(ctx: DemoContext, events: list[dict[str, Any]]) -> None:
    for e in events:
        code = (e.get("responseStatus") or {}).get("code", "")
        objects = [k for k in ("requestObject", "responseObject") if k in e]
        ctx.t.say(f"  {e['stage']:<17} level={e['level']} {e['verb']} {e['requestURI']} "
                  f"user={e['user']['username']} {code} {' '.join(objects)} "
                  f"{e.get('annotations', '')}")  # fmt: skip


async def audit(ctx: DemoContext) -> None:
    t = ctx.t
    pki = _pki(ctx)
    base = ctx.state.secure_url
    log = Path(ctx.state.kubeconfig).parent / "audit.log"
    t.title(f"the audit trail of one request ({log})")
    path = "/api/v1/namespaces/default/configmaps"
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "audit-demo"},
          "data": {"hello": "audit"}}  # fmt: skip
    async with _session(pki, ADMIN[0]) as admin:
        await request(admin, base, f"{path}/audit-demo", method="DELETE")
        async with admin.post(base + path, json=cm) as r:
            await r.read()
            audit_id = r.headers.get("Audit-Id", "")
            t.say(f"  POST {path} -> {r.status}, Audit-Id: {audit_id}")
        events = await _trail_of(log, audit_id, 2)
        _show(ctx, events)
        stages = [e["stage"] for e in events]
        t.check("the request is logged at RequestReceived then ResponseComplete",
                stages == ["RequestReceived", "ResponseComplete"], str(stages))  # fmt: skip
        done = events[-1] if events else {}
        t.check("at RequestResponse: the object sent and the object stored",
                done.get("requestObject", {}).get("data") == cm["data"]
                and done.get("responseObject", {}).get("metadata", {}).get("uid"))  # fmt: skip
        decision = done.get("annotations", {}).get("authorization.k8s.io/decision")
        t.check("authorization's decision is annotated", decision == "allow", str(decision))
        async with admin.get(base + path + "?watch=1&timeoutSeconds=1") as r:
            await r.read()
            watch_id = r.headers.get("Audit-Id", "")
        watch = await _trail_of(log, watch_id, 3)
        _show(ctx, watch)
        t.check("a watch adds ResponseStarted when its stream opens",
                [e["stage"] for e in watch] == ["RequestReceived", "ResponseStarted",
                                                "ResponseComplete"])  # fmt: skip
        await request(admin, base, f"{path}/audit-demo", method="DELETE")
    t.explain("the audit policy picks a level per request (None, Metadata, Request, "
              "RequestResponse); each stage of the request is one JSON line of "
              "audit.k8s.io/v1 Event, written off the request path by a buffered "
              "backend.")  # fmt: skip
