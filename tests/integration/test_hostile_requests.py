"""Hostile requests on the secure port (issue 23 §1, §3): bytes that are not UTF-8 and
malformed claims in every header that reaches authentication, impersonation and the
audit log. None is a 500; no request loses another's audit event; every request that
got an answer has its events in the log."""

from __future__ import annotations

import asyncio
import io
import ssl
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import jwt
import orjson
import pytest
from yarl import URL

from lab.etcd import EtcdCluster
from tests.integration.conftest import ServerProcess, start_server
from tests.integration.raw_http import Answer, exchange, request_bytes

pytestmark = pytest.mark.etcd

ADMIN = "admintok"
POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*"]
- level: Request
  resources: [{group: "rbac.authorization.k8s.io", resources: ["roles"]}]
- level: Metadata
"""
ISSUER = "https://kubernetes.default.svc.cluster.local"


@dataclass
class Hostile:
    server: ServerProcess
    dir: Path

    @property
    def url(self) -> str:
        return self.server.secure_url

    def events(self) -> list[dict[str, Any]]:
        log = self.dir / "audit.log"
        return (
            [orjson.loads(line) for line in log.read_bytes().splitlines()] if log.exists() else []
        )

    async def audited(self, audit_ids: set[str], patience: float = 10.0,
                      stage: str = "ResponseComplete") -> dict[str, list[Any]]:  # fmt: skip
        """The ``stage`` events of ``audit_ids``, once all are written (or ``patience``
        seconds passed: the missing ones are absent)."""
        deadline = time.monotonic() + patience
        while True:
            found: dict[str, list[Any]] = {}
            for e in self.events():
                if e["auditID"] in audit_ids and e["stage"] == stage:
                    found.setdefault(e["auditID"], []).append(e)
            if len(found) == len(audit_ids) or time.monotonic() > deadline:
                return found
            await asyncio.sleep(0.1)


@pytest.fixture(scope="module")
def hostile(etcd: EtcdCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    d = tmp_path_factory.mktemp("hostile")
    (d / "policy.yaml").write_text(POLICY)
    (d / "tokens.csv").write_text(f'{ADMIN},admin,uid-admin,"system:masters"\n')
    with start_server(
        etcd.endpoints, None, "--secure-port=0", f"--cert-dir={d / 'certs'}",
        f"--token-auth-file={d / 'tokens.csv'}", f"--audit-policy-file={d / 'policy.yaml'}",
        f"--audit-log-path={d / 'audit.log'}",
    ) as proc:  # fmt: skip
        yield Hostile(proc, d)


async def _raw(h: Hostile, method: str, path: str, headers: Mapping[str, bytes | str],
               body: bytes = b"") -> Answer:  # fmt: skip
    return await exchange(h.url, request_bytes(method, path, headers, body))


def _metric(text: str, name: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name))  # fmt: skip


async def _audit_errors(h: Hostile) -> float:
    answer = await _raw(h, "GET", "/metrics", {"Authorization": f"Bearer {ADMIN}"})
    return _metric(answer.body.decode(), "apiserver_audit_error_total")


# ------------------------------------------------------------- §1 audit integrity


@pytest.mark.parametrize("metadata", ["x", 5, [1], 1.5, True])
async def test_a_create_whose_metadata_is_no_object_loses_no_event(
    hostile: Hostile, metadata: object
) -> None:
    """``{"metadata": "x"}`` (400) made the writer drop its whole batch: every event
    written at the same time as its own was lost."""
    admin = {"Authorization": f"Bearer {ADMIN}"}
    body = orjson.dumps({"metadata": metadata, "rules": []})
    path = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles"
    ssl = aiohttp.TCPConnector(ssl=False)
    async with aiohttp.ClientSession(connector=ssl) as http:

        async def one(method: str, url: str, data: bytes | None = None) -> str:
            headers = {**admin, "Content-Type": "application/json"}
            async with http.request(method, hostile.url + url, data=data, headers=headers) as r:
                await r.read()
                return r.headers["Audit-Id"]

        others = [one("GET", "/api/v1/namespaces/default/configmaps") for _ in range(50)]
        ids = await asyncio.gather(one("POST", path, body), *others)
    found = await hostile.audited(set(ids))
    assert set(found) == set(ids), f"{len(set(ids) - set(found))} events lost"
    (event,) = found[ids[0]]
    assert event["responseStatus"]["code"] == 400
    assert event["objectRef"] == {
        "resource": "roles",
        "namespace": "default",
        "apiGroup": "rbac.authorization.k8s.io",
        "apiVersion": "v1",
    }
    assert await _audit_errors(hostile) == 0


async def test_a_user_agent_that_is_not_utf8_is_audited_with_replacement_characters(
    hostile: Hostile,
) -> None:
    """Unauthenticated, ``User-Agent: \\xff`` on /version erased the events written with
    its own; Go's encoder writes invalid UTF-8 as U+FFFD."""
    admin = {"Authorization": f"Bearer {ADMIN}"}
    hostile_ua = _raw(hostile, "GET", "/version", {"User-Agent": b"\xffua\xc3\x28"})
    plain = [_raw(hostile, "GET", "/api/v1/namespaces", admin) for _ in range(20)]
    answers = await asyncio.gather(hostile_ua, *plain)
    assert [a.status for a in answers] == [200] * len(answers)
    ids = {a.header("Audit-Id") or "" for a in answers}
    found = await hostile.audited(ids)
    assert set(found) == ids
    (event,) = found[answers[0].header("Audit-Id") or ""]
    assert event["userAgent"] == "\ufffdua\ufffd("
    assert event["user"]["username"] == "system:anonymous"
    assert await _audit_errors(hostile) == 0


# ------------------------------------------------------- §3 bad bytes in headers


@pytest.mark.parametrize(
    ("headers", "code"),
    [
        ({"Authorization": b"Bearer " + ADMIN.encode() + b"\xff"}, 401),
        ({"Authorization": b"Bearer \xc3\x28"}, 401),
        ({"Authorization": b"Bearer \x01tok"}, 400),  # the HTTP parser's, as Go's
        ({"Authorization": b"Basic \xff\xfe"}, 403),  # not a bearer token: anonymous
        ({"Authorization": f"Bearer {ADMIN}", "Impersonate-User": b"adm\xffin"}, 200),
        ({"Authorization": f"Bearer {ADMIN}", "Impersonate-User": "x",
          "Impersonate-Group": b"g\xff"}, 200),
        ({"Authorization": f"Bearer {ADMIN}", "Impersonate-User": "x",
          "Impersonate-Extra-scope": b"v\xff"}, 200),
        ({"User-Agent": b"ua\xff"}, 403),
        ({"Audit-ID": b"id\xff"}, 403),  # audited and answered as id\ufffd
        ({"Accept": b"application/json\xff"}, 403),
        ({"X-Forwarded-For": b"1.2.3.4\xff, \xfe"}, 403),
    ],
)  # fmt: skip
async def test_header_bytes_that_are_not_utf8_never_answer_500(
    hostile: Hostile, headers: Mapping[str, bytes | str], code: int
) -> None:
    """Each was a 500 with a traceback. Impersonating a user that does not exist is
    allowed for system:masters (nothing checks that a user exists), then its LIST is 403."""
    answer = await _raw(hostile, "GET", "/api/v1/namespaces/default/configmaps", headers)
    expected = 403 if code == 200 else code  # the impersonated user may not list
    assert answer.status == expected, answer
    if code == 400:
        return
    status = orjson.loads(answer.body)
    assert status["kind"] == "Status" and status["code"] == expected
    ids = {answer.header("Audit-Id") or ""}
    stage = "ResponseStarted" if code == 401 else "ResponseComplete"  # upstream's stages
    assert set(await hostile.audited(ids, stage=stage)) == ids


# ------------------------------------------------ failed authentication is audited


@pytest.mark.parametrize(
    ("headers", "query", "message"),
    [
        ({"Authorization": "Bearer nosuchtoken"}, "", "attempted: bearer"),
        ({"Authorization": "Bearer nosuchtoken"}, "?access_token=x",
         "attempted: bearer, access_token"),
        ({"Authorization": "Bearer a.b.c", "Audit-ID": "client-chosen-401"}, "",
         "attempted: bearer"),
    ],
)  # fmt: skip
async def test_a_failed_authentication_is_audited_as_upstream(
    hostile: Hostile, headers: dict[str, str], query: str, message: str
) -> None:
    """A 401 left no trace in the audit log: authentication answers before the audit
    filter. Upstream's ``WithFailedAuthenticationAudit`` writes one event for it, at
    ResponseStarted, with no user and the credentials tried; the answer carries its
    Audit-Id (``WithAuditInit`` is outside authentication)."""
    path = "/api/v1/namespaces/default/configmaps"
    answer = await _raw(hostile, "GET", path + query, headers)
    assert answer.status == 401, answer
    audit_id = answer.header("Audit-Id") or ""
    assert audit_id == headers.get("Audit-ID", audit_id) and audit_id
    found = await hostile.audited({audit_id}, stage="ResponseStarted")
    (event,) = found[audit_id]
    assert event["user"] == {}
    assert event["verb"] == "list" and event["requestURI"] == path + query
    assert event["objectRef"] == {"resource": "configmaps", "namespace": "default",
                                  "apiVersion": "v1"}  # fmt: skip
    assert event["responseStatus"] == {
        "metadata": {}, "message": f"Authentication failed, {message}", "code": 401,
    }  # fmt: skip
    assert event["level"] == "Metadata"
    assert [e["stage"] for e in hostile.events() if e["auditID"] == audit_id] == [
        "ResponseStarted"
    ]


async def test_a_failed_authentication_under_a_none_rule_is_not_audited(
    hostile: Hostile,
) -> None:
    """The policy decides for the unauthenticated request too (``/healthz`` is None)."""
    answer = await _raw(hostile, "GET", "/healthz", {"Authorization": "Bearer nosuchtoken"})
    assert answer.status == 401, answer
    audit_id = answer.header("Audit-Id") or ""
    assert audit_id
    # a later 401 that is audited: once its event is written, the first's would be too
    later = await _raw(hostile, "GET", "/api", {"Authorization": "Bearer nosuchtoken"})
    later_id = later.header("Audit-Id") or ""
    assert later.status == 401 and await hostile.audited({later_id}, stage="ResponseStarted")
    assert not [e for e in hostile.events() if e["auditID"] == audit_id]


def _signed(h: Hostile, **claims: object) -> str:
    key = (h.dir / "certs" / "service-account.key").read_bytes()
    now = int(time.time())
    body = {"iss": ISSUER, "sub": "system:serviceaccount:default:default", "iat": now,
            "nbf": now, "exp": now + 600,
            "kubernetes.io": {"namespace": "default", "serviceaccount": {"name": "default"}},
            **claims}  # fmt: skip
    return jwt.encode(body, key, algorithm="RS256")


@pytest.mark.parametrize(
    "aud", [5, {"a": "b"}, [5], [None], 1.5, True, ["https://kubernetes.default.svc", {}]]
)
async def test_service_account_tokens_with_malformed_audiences_are_401(
    hostile: Hostile, aud: object
) -> None:
    """go-jose takes ``aud`` as a string or an array of strings and refuses the token
    otherwise; ``"aud": 5`` was a 500 and an object was accepted."""
    token = _signed(hostile, aud=aud)
    answer = await _raw(hostile, "GET", "/api/v1/namespaces", {"Authorization": f"Bearer {token}"})
    assert answer.status == 401, answer


@pytest.mark.parametrize(
    "private",
    [{"namespace": 5, "serviceaccount": {"name": "default"}},
     {"namespace": "default", "serviceaccount": {"name": {"a": 1}}},
     {"namespace": "default", "serviceaccount": {"name": "default", "uid": 7}},
     {"namespace": "default", "serviceaccount": {"name": "default"}, "pod": "p"},
     {"namespace": "default", "serviceaccount": ["default"]}],
)  # fmt: skip
async def test_service_account_tokens_with_mistyped_kubernetes_claims_are_401(
    hostile: Hostile, private: object
) -> None:
    """Upstream decodes the ``kubernetes.io`` claims into typed structs: a name that is
    an object was taken as the user ``system:serviceaccount:default:{'a': 1}``."""
    admin = {"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json"}
    sa = orjson.dumps({"metadata": {"name": "default"}})
    path = "/api/v1/namespaces/default/serviceaccounts"
    assert (await _raw(hostile, "POST", path, admin, sa)).status in (201, 409)  # it exists
    token = _signed(hostile, aud=[ISSUER], **{"kubernetes.io": private})
    answer = await _raw(hostile, "GET", "/api/v1/namespaces", {"Authorization": f"Bearer {token}"})
    assert answer.status == 401, answer


async def test_a_well_formed_service_account_token_still_authenticates(hostile: Hostile) -> None:
    admin = {"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json"}
    sa = orjson.dumps({"metadata": {"name": "default"}})
    path = "/api/v1/namespaces/default/serviceaccounts"
    assert (await _raw(hostile, "POST", path, admin, sa)).status in (201, 409)
    token = _signed(hostile, aud=["https://kubernetes.default.svc.cluster.local"])
    answer = await _raw(hostile, "GET", "/apis/authentication.k8s.io/v1",
                        {"Authorization": f"Bearer {token}"})  # fmt: skip
    assert answer.status == 200, answer


async def test_the_metrics_still_encode(hostile: Hostile) -> None:
    answer = await _raw(hostile, "GET", "/metrics", {"Authorization": f"Bearer {ADMIN}"})
    assert answer.status == 200 and b"apiserver_request_total" in answer.body


async def test_a_client_closing_mid_response_is_no_error(hostile: Hostile) -> None:
    """A client closing the connection while a large LIST was written logged ``ERROR
    aiohttp.server`` with a traceback (8-16 per load run); kube-apiserver logs nothing."""
    admin = {"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json"}
    path = "/api/v1/namespaces/default/configmaps"
    for i in range(40):
        body = orjson.dumps({"metadata": {"name": f"big-{i}"}, "data": {"k": "x" * 100_000}})
        assert (await _raw(hostile, "POST", path, admin, body)).status in (201, 409)
    target = URL(hostile.url)
    for accept in ("application/json", "application/json;as=Table;v=v1;g=meta.k8s.io"):
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        reader, writer = await asyncio.open_connection(target.host, target.port, ssl=context)
        writer.write(request_bytes("GET", path, {**admin, "Accept": accept}))
        await reader.read(1000)  # the answer has started
        writer.transport.abort()
    await asyncio.sleep(1)  # the server meets the closed connection
    answer = await _raw(hostile, "GET", "/readyz", admin)
    assert answer.status == 200
    log = hostile.server.log()
    assert "ERROR aiohttp.server" not in log, log[-3000:]


async def test_nothing_was_logged_as_an_error(hostile: Hostile) -> None:
    log = hostile.server.log()
    assert " ERROR " not in log and "Traceback" not in log, log[-3000:]


async def test_a_hostile_yaml_create_stalls_no_one_through_the_audit_log(
    hostile: Hostile,
) -> None:
    """The audit writer read a create's body for the created object's name, on the
    event loop for a Metadata event: a 3 MiB YAML flow sequence (refused by the
    request's own decoder: too many nodes) held the loop 80-170 s in the fuzz suite,
    and every client waited. Now such a body is not read, and bodies are read beside
    the loop; the event is still written, without a name."""
    zeros = b",".join([b"0"] * 1_500_000)
    body = b"metadata: {name: h}\ndata: {x: [" + zeros + b"]}"
    admin = {"Authorization": f"Bearer {ADMIN}"}
    path = "/api/v1/namespaces/default/configmaps"
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as http:
        headers = {**admin, "Content-Type": "application/yaml"}
        async with http.post(hostile.url + path, data=io.BytesIO(body), headers=headers) as resp:
            await resp.read()
            assert resp.status == 400, resp.status
            audit_id = resp.headers["Audit-Id"]
        took = []
        for _ in range(20):  # the writer takes the event within 50 ms of the answer
            start = time.perf_counter()
            async with http.get(hostile.url + "/version", headers=admin) as probe:
                await probe.read()
            took.append(time.perf_counter() - start)
            await asyncio.sleep(0.05)
    assert max(took) < 1.0, [round(t, 3) for t in took]
    (event,) = (await hostile.audited({audit_id}))[audit_id]
    assert event["objectRef"] == {"resource": "configmaps", "namespace": "default",
                                  "apiVersion": "v1"}  # fmt: skip
