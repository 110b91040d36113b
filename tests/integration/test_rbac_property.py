"""Property: what the secure port returns is exactly what a random RBAC policy allows,
for a cached and an uncached server.

Per seed: three namespaces of labelled ConfigMaps, four users with static tokens, and a
random policy — Roles or ClusterRoles (verbs from get/list/watch, sometimes limited by
resourceNames) bound in random namespaces, sometimes cluster-wide. The expected answer
of each request comes from a reference model written here (not the server's matcher):

- LIST (namespace and cluster-wide; label selector or none; resourceVersion unset or 0):
  allowed → exactly the matching objects of that scope; denied → 403 with upstream's
  message, nothing else;
- GET of each object and of a missing name: allowed → the object (or 404); denied → 403
  (never 404: existence does not leak);
- WATCH from resourceVersion 0 with bookmarks: allowed → ADDED events of that namespace
  only; denied → 403.
"""

from __future__ import annotations

import asyncio
import json
import random
import ssl
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from lab.etcd import EtcdCluster
from tests.integration.conftest import ServerProcess, start_server

SEEDS = (1, 2, 3)
USERS_PER_SEED = 4
RBAC = "rbac.authorization.k8s.io"
VERBS = ("get", "list", "watch")


@dataclass
class Grant:
    verbs: frozenset[str]
    names: frozenset[str]  # empty: every name
    namespace: str  # "": cluster-wide (ClusterRoleBinding)


@dataclass
class Model:
    grants: dict[str, list[Grant]] = field(default_factory=dict)

    def allows(self, user: str, verb: str, namespace: str, name: str = "") -> bool:
        for g in self.grants.get(user, []):
            if verb not in g.verbs or (g.namespace and g.namespace != namespace):
                continue
            if not g.names or (name and name in g.names):
                return True
        return False


@dataclass
class Secure:
    server: ServerProcess
    tokens: dict[str, str]
    ssl: ssl.SSLContext


@pytest.fixture(scope="module", params=["uncached", "cached"])
def secure(
    etcd: EtcdCluster, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Secure]:
    d: Path = tmp_path_factory.mktemp("rbac-prop")
    users = [f"s{seed}-u{i}" for seed in SEEDS for i in range(USERS_PER_SEED)]
    tokens = {u: uuid.uuid4().hex for u in users}
    (d / "tokens.csv").write_text("".join(f"{t},{u},{u}\n" for u, t in tokens.items()))
    flag = "--watch-cache=false" if request.param == "uncached" else "--watch-cache=true"
    server = start_server(
        etcd.endpoints, None, flag, "--secure-port=0", f"--cert-dir={d / 'certs'}",
        f"--token-auth-file={d / 'tokens.csv'}",
    )  # fmt: skip
    try:
        ctx = ssl.create_default_context(cafile=str(d / "certs" / "apiserver.crt"))
        yield Secure(server, tokens, ctx)
    finally:
        server.stop()


def _random_policy(
    rng: random.Random, seed: int, names: dict[str, list[str]]
) -> tuple[Model, list[dict[str, Any]]]:
    model = Model()
    objects: list[dict[str, Any]] = []
    for i in range(USERS_PER_SEED):
        user = f"s{seed}-u{i}"
        for j in range(rng.randint(0, 3)):
            verbs = frozenset(rng.sample(VERBS, rng.randint(1, 3)))
            cluster_wide = rng.random() < 0.15
            ns = "" if cluster_wide else rng.choice(list(names))
            limited = (not cluster_wide) and rng.random() < 0.3
            granted = frozenset(rng.sample(names[ns], 1)) if limited else frozenset()
            rule: dict[str, Any] = {"apiGroups": [""], "resources": ["configmaps"],
                                    "verbs": sorted(verbs)}  # fmt: skip
            if granted:
                rule["resourceNames"] = sorted(granted)
            role_name = f"{user}-r{j}"
            use_cluster_role = cluster_wide or rng.random() < 0.5
            role_meta = (
                {"name": role_name} if use_cluster_role else {"name": role_name, "namespace": ns}
            )
            role_kind = "ClusterRole" if use_cluster_role else "Role"
            objects.append({"apiVersion": f"{RBAC}/v1", "kind": role_kind,
                            "metadata": role_meta, "rules": [rule]})  # fmt: skip
            binding_meta = {"name": f"{user}-b{j}"} | ({"namespace": ns} if ns else {})
            objects.append({
                "apiVersion": f"{RBAC}/v1",
                "kind": "ClusterRoleBinding" if cluster_wide else "RoleBinding",
                "metadata": binding_meta,
                "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole" if use_cluster_role else "Role",
                            "name": role_name},
                "subjects": [{"apiGroup": RBAC, "kind": "User", "name": user}],
            })  # fmt: skip
            model.grants.setdefault(user, []).append(Grant(verbs, granted, ns))
    return model, objects


def _path(kind: str, meta: dict[str, Any]) -> str:
    plural = kind.lower() + "s"
    ns = meta.get("namespace")
    base = f"/apis/{RBAC}/v1"
    return f"{base}/namespaces/{ns}/{plural}" if ns else f"{base}/{plural}"


def _forbidden(user: str, verb: str, ns: str, name: str = "") -> str:
    head = f'configmaps "{name}" is forbidden' if name else "configmaps is forbidden"
    scope = f'in the namespace "{ns}"' if ns else "at the cluster scope"
    return f'{head}: User "{user}" cannot {verb} resource "configmaps" in API group "" {scope}'


async def _check_list(
    http: aiohttp.ClientSession, s: Secure, model: Model, user: str, ns: str,
    all_cms: dict[tuple[str, str], dict[str, str]], rng: random.Random,
) -> None:  # fmt: skip
    color = rng.choice(["", "red", "blue"])
    params = {"labelSelector": f"color={color}"} if color else {}
    if rng.random() < 0.5:
        params["resourceVersion"] = "0"
    path = f"/api/v1/namespaces/{ns}/configmaps" if ns else "/api/v1/configmaps"
    async with http.get(path, params=params, headers=_auth(s, user)) as resp:
        body = await resp.json()
    if model.allows(user, "list", ns):
        assert resp.status == 200, (user, ns, body)
        got = {(i["metadata"]["namespace"], i["metadata"]["name"]) for i in body["items"]}
        want = {(n, name) for (n, name), labels in all_cms.items()
                if (not ns or n == ns) and (not color or labels.get("color") == color)}  # fmt: skip
        assert got == want, (user, ns, params)
    else:
        assert resp.status == 403, (user, ns, body)
        assert body["message"] == _forbidden(user, "list", ns), body


async def _check_gets(http: aiohttp.ClientSession, s: Secure, model: Model, user: str, ns: str,
                      names: list[str]) -> None:  # fmt: skip
    for name in [*names, "no-such-object"]:
        rv = {"resourceVersion": "0"} if name.endswith("1") else {}
        path = f"/api/v1/namespaces/{ns}/configmaps/{name}"
        async with http.get(path, params=rv, headers=_auth(s, user)) as resp:
            body = await resp.json()
        if model.allows(user, "get", ns, name):
            assert resp.status == (404 if name == "no-such-object" else 200), (user, ns, name)
        else:
            assert resp.status == 403, (user, ns, name, body)
            assert body["message"] == _forbidden(user, "get", ns, name)


async def _check_watch(http: aiohttp.ClientSession, s: Secure, model: Model, user: str, ns: str,
                       names: list[str], streaming: bool) -> None:  # fmt: skip
    """A watch from RV=0, or (``streaming``) a streaming list: sendInitialEvents, ended
    by the initial-events-end BOOKMARK, which carries no object of any namespace."""
    params = {"watch": "1", "resourceVersion": "0", "allowWatchBookmarks": "true",
              "timeoutSeconds": "1"}  # fmt: skip
    if streaming:
        params = {**params, "sendInitialEvents": "true", "resourceVersion": "",
                  "resourceVersionMatch": "NotOlderThan"}  # fmt: skip
    path = f"/api/v1/namespaces/{ns}/configmaps"
    async with http.get(path, params=params, headers=_auth(s, user)) as resp:
        if not model.allows(user, "watch", ns):
            body = await resp.json()
            assert resp.status == 403 and body["message"] == _forbidden(user, "watch", ns)
            return
        assert resp.status == 200
        seen: set[str] = set()
        async for line in resp.content:
            event = json.loads(line)
            meta = event["object"].get("metadata", {})
            if event["type"] == "ADDED":
                assert meta["namespace"] == ns, event
                seen.add(meta["name"])
            elif event["type"] == "BOOKMARK":
                assert not meta.get("name") and not meta.get("namespace"), event
                if streaming:
                    break  # the initial-events-end bookmark: the initial state is complete
            if seen == set(names) and not streaming:
                break  # the initial state is complete (anything foreign came before it)
        assert seen == set(names)


def _auth(s: Secure, user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {s.tokens[user]}"}


async def _settle(http: aiohttp.ClientSession, s: Secure, model: Model, namespaces: list[str],
                  users: list[str]) -> None:  # fmt: skip
    """Wait until the informer has every binding: the admin's SubjectAccessReviews agree
    with the model (the HTTP checks that follow are the assertions)."""
    for _ in range(100):
        agreed = True
        for user in users:
            for ns in namespaces:
                attrs = {"namespace": ns, "verb": "list", "resource": "configmaps"}
                review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                          "spec": {"user": user, "resourceAttributes": attrs}}  # fmt: skip
                sar = f"{s.server.url}/apis/authorization.k8s.io/v1/subjectaccessreviews"
                async with http.post(sar, json=review) as resp:
                    allowed = (await resp.json())["status"]["allowed"]
                agreed = agreed and allowed == model.allows(user, "list", ns)
        if agreed:
            return
        await asyncio.sleep(0.1)


@pytest.mark.parametrize("seed", SEEDS)
async def test_server_answers_exactly_what_the_policy_allows(secure: Secure, seed: int) -> None:
    rng = random.Random(seed)
    tag = uuid.uuid4().hex[:6]
    namespaces = [f"p{seed}-{tag}-{c}" for c in "abc"]
    names = {ns: [f"cm{i}" for i in range(3)] for ns in namespaces}
    base = secure.server.secure_url
    connector = aiohttp.TCPConnector(ssl=secure.ssl)
    async with aiohttp.ClientSession(base_url=base, connector=connector) as http, \
            aiohttp.ClientSession() as admin:  # fmt: skip
        plain = secure.server.url
        all_cms: dict[tuple[str, str], dict[str, str]] = {}
        for ns in namespaces:
            async with admin.post(
                f"{plain}/api/v1/namespaces", json={"metadata": {"name": ns}}
            ) as r:
                assert r.status == 201
            for name in names[ns]:
                labels = {"color": rng.choice(["red", "blue"])}
                cm = {
                    "metadata": {"name": name, "labels": labels},
                    "data": {"secret": f"{ns}/{name}"},
                }
                async with admin.post(f"{plain}/api/v1/namespaces/{ns}/configmaps", json=cm) as r:
                    assert r.status == 201
        async with admin.get(
            f"{plain}/api/v1/configmaps"
        ) as r:  # every namespace's, for cluster-wide lists
            for item in (await r.json())["items"]:
                all_cms[(item["metadata"]["namespace"], item["metadata"]["name"])] = (
                    item["metadata"].get("labels") or {}
                )
        model, objects = _random_policy(rng, seed, names)
        for obj in objects:
            async with admin.post(plain + _path(obj["kind"], obj["metadata"]), json=obj) as r:
                assert r.status == 201, await r.text()
        users = [f"s{seed}-u{i}" for i in range(USERS_PER_SEED)]
        pairs = [(u, ns) for u in users for ns in namespaces]
        # not a degenerate policy: some lists allowed, some denied
        assert any(model.allows(u, "list", ns) for u, ns in pairs)
        assert not all(model.allows(u, "list", ns) for u, ns in pairs)
        await _settle(admin, secure, model, namespaces, users)
        for user in users:
            await _check_list(http, secure, model, user, "", all_cms, rng)
            for ns in namespaces:
                await _check_list(http, secure, model, user, ns, all_cms, rng)
                await _check_gets(http, secure, model, user, ns, names[ns])
                await _check_watch(http, secure, model, user, ns, names[ns], rng.random() < 0.5)
