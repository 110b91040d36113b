"""The lab's authentication and authorization demos, over its HTTPS port:

- ``authn``: the same question (SelfSubjectReview: who am I?) asked as anonymous, with a
  static token, with a client certificate and as a service account (a TokenRequest
  token), then with a wrong token: 401;
- ``rbac``: the learner is denied (upstream's 403), a RoleBinding grants ``view`` in one
  namespace, the learner is then allowed there and still denied elsewhere, and a watch
  of that namespace sees only its objects. The binding is removed at the end.

The administrator's writes go through the HTTPS port with the lab-admin certificate.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson

from lab import seed
from lab.observe import request
from lab.pki import ADMIN, LEARNER, TOKEN_USER, LabPKI

if TYPE_CHECKING:
    from lab.demo_context import DemoContext

__all__ = ["authn", "rbac"]

WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
RBAC = "rbac.authorization.k8s.io"


def _session(pki: LabPKI, user: str | None = None, token: str = "") -> aiohttp.ClientSession:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    connector = aiohttp.TCPConnector(ssl=pki.ssl_context(user))
    return aiohttp.ClientSession(connector=connector, headers=headers,
                                 timeout=aiohttp.ClientTimeout(total=60))  # fmt: skip


def _pki(ctx: DemoContext) -> LabPKI:
    if not ctx.state.secure_url or not ctx.state.pki_dir:
        raise RuntimeError("this lab has no HTTPS port (started by an older watchcache)")
    return LabPKI(Path(ctx.state.pki_dir))


async def _whoami(ctx: DemoContext, session: aiohttp.ClientSession, label: str) -> str:
    """The username the server sees: SelfSubjectReview's answer, or the user a 403 names
    (anonymous may not ask: system:basic-user is bound to system:authenticated only)."""
    o = await request(session, ctx.state.secure_url, WHOAMI, method="POST", body=REVIEW)
    body = o.body if isinstance(o.body, dict) else {}
    if o.status == 201:
        info = body.get("status", {}).get("userInfo", {})
        name, groups = str(info.get("username", "")), info.get("groups", [])
    else:
        found = re.search(r'User "([^"]*)"', o.message)
        name, groups = (found.group(1) if found else ""), []
    ctx.t.say(f"  {label:<20} -> {o.status} {name or o.message} {groups or ''}")
    return name


async def authn(ctx: DemoContext) -> None:
    t = ctx.t
    pki = _pki(ctx)
    t.title("who am I? anonymous, token, client certificate, service account")
    base = ctx.state.secure_url
    async with _session(pki, ADMIN[0]) as admin:
        sa = {"apiVersion": "v1", "kind": "ServiceAccount",
              "metadata": {"name": "lab-robot", "namespace": "default"}}  # fmt: skip
        sas = "/api/v1/namespaces/default/serviceaccounts"
        await request(admin, base, sas, method="POST", body=sa)
        tr = await request(admin, base, f"{sas}/lab-robot/token", method="POST",
                           body={"spec": {"expirationSeconds": 600}})  # fmt: skip
        sa_token = (tr.body or {}).get("status", {}).get("token", "")
        t.check("TokenRequest (kubectl create token) answered a token", tr.status == 201 and
                sa_token.count(".") == 2, str(tr.status))  # fmt: skip
    cases = [
        ("anonymous", None, "", "system:anonymous"),
        ("static token", None, pki.token, TOKEN_USER),
        ("client certificate", LEARNER[0], "", LEARNER[0]),
        ("service account", None, sa_token, "system:serviceaccount:default:lab-robot"),
    ]
    for label, cert, token, want in cases:
        async with _session(pki, cert, token) as s:
            name = await _whoami(ctx, s, label)
        t.check(f"{label}: the server sees {want}", name == want, name)
    async with _session(pki, None, "not-a-valid-token") as s:
        o = t.obs(await request(s, base, WHOAMI, method="POST", body=REVIEW))
    t.check("a wrong token is 401 Unauthorized, never anonymous",
            o.status == 401 and o.message == "Unauthorized", f"{o.status} {o.message}")  # fmt: skip
    t.explain("authentication turns a credential into a user and groups; no credential is "
              "system:anonymous, a bad one is 401. What that user may do is authorization's "
              "business (demo rbac).")  # fmt: skip


async def _until(check: Any, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while not await check():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.1)
    return True


async def rbac(ctx: DemoContext) -> None:
    t = ctx.t
    pki = _pki(ctx)
    base = ctx.state.secure_url
    ns, other = seed.namespace_name(0), seed.namespace_name(1)
    t.title(f"the learner: denied, granted view in {ns}, allowed there only")
    binding_path = f"/apis/{RBAC}/v1/namespaces/{ns}/rolebindings"
    binding = {
        "apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
        "metadata": {"name": "learner-view", "namespace": ns},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"},
        "subjects": [{"apiGroup": RBAC, "kind": "User", "name": LEARNER[0]}],
    }  # fmt: skip
    pods = f"/api/v1/namespaces/{ns}/pods?limit=5"
    async with _session(pki, LEARNER[0]) as learner, _session(pki, ADMIN[0]) as admin:
        await request(admin, base, f"{binding_path}/learner-view", method="DELETE")
        denied = t.obs(await request(learner, base, pods))
        want = (f'pods is forbidden: User "{LEARNER[0]}" cannot list resource "pods" in API '
                f'group "" in the namespace "{ns}"')  # fmt: skip
        t.check("the learner is denied with upstream's message",
                denied.status == 403 and denied.message == want, denied.message)  # fmt: skip
        created = t.obs(await request(admin, base, binding_path, method="POST", body=binding))
        t.check("the admin binds ClusterRole view to the learner in " + ns, created.status == 201)

        async def allowed() -> bool:
            return (await request(learner, base, pods)).status == 200

        t.check("the learner may list pods there (once the binding reached the authorizer)",
                await _until(allowed))  # fmt: skip
        t.obs(await request(learner, base, pods))
        elsewhere = t.obs(await request(learner, base, f"/api/v1/namespaces/{other}/pods"))
        t.check(f"still denied in {other}", elsewhere.status == 403)
        cluster = t.obs(await request(learner, base, "/api/v1/pods?resourceVersion=0"))
        t.check("and across all namespaces, even from the cache (RV=0)", cluster.status == 403)
        seen = await _watch_namespaces(learner, base, ns)
        t.check(f"a watch from RV=0 sees only {ns}", seen == {ns}, ",".join(sorted(seen)))
        await request(admin, base, f"{binding_path}/learner-view", method="DELETE")
    t.explain("every request, watches and cached reads included, is authorized before it "
              "reaches the cache; a RoleBinding grants a role's rules in its namespace "
              "only.")  # fmt: skip


async def _watch_namespaces(session: aiohttp.ClientSession, base: str, ns: str) -> set[str]:
    """The namespaces of a watch's initial events (a second of them at most)."""
    seen: set[str] = set()
    path = f"/api/v1/namespaces/{ns}/pods?watch=1&resourceVersion=0&timeoutSeconds=1"
    async with session.get(base + path) as r:
        if r.status != 200:
            return seen
        async for line in r.content:
            event = orjson.loads(line)
            seen.add(event.get("object", {}).get("metadata", {}).get("namespace", ""))
    return seen
