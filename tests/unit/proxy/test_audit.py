"""Audit pieces without a server: the policy's rule matching, the event encoding (Go's
escaping, objects decoded in the writer), the log backend's overflow and rotation."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from pathlib import Path

import pytest
import yaml
from aiohttp.test_utils import make_mocked_request

from proxy.audit.event import AuditEvent, RawObject, materialize, new_audit_id, timestamp
from proxy.audit.log_backend import LogBackend, RotatingFile, encode_event
from proxy.audit.policy import Decision, PolicyError, parse_policy
from proxy.request.request_info import parse_request_info
from proxy.request.user import UserInfo

POLICY = yaml.safe_load("""
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
omitManagedFields: true
rules:
- level: None
  users: ["system:kube-proxy"]
- level: RequestResponse
  resources: [{group: "", resources: ["pods/status"]}]
  omitManagedFields: false
- level: Request
  resources:
  - {group: "apps", resources: ["*/scale"]}
  - {group: "", resources: ["secrets"], resourceNames: ["s1"]}
  namespaces: ["prod"]
- level: Metadata
  nonResourceURLs: ["/apis*"]
  omitStages: [ResponseComplete]
- level: Metadata
  userGroups: ["devs"]
  verbs: ["get"]
""")

ALICE = UserInfo("alice", groups=("devs",))


def _decide(user: UserInfo, method: str, path: str) -> tuple[str, set[str], bool]:
    d = parse_policy(POLICY).decide(user, parse_request_info(method, path, {}))
    return d.level, set(d.omit_stages), d.omit_managed_fields


def test_rules_match_in_order_with_upstream_semantics() -> None:
    assert (
        _decide(UserInfo("system:kube-proxy", groups=("devs",)), "GET", "/api/v1/pods")[0] == "None"
    )
    assert _decide(ALICE, "PUT", "/api/v1/namespaces/a/pods/p/status") == (
        "RequestResponse", {"RequestReceived"}, False,
    )  # fmt: skip
    assert (
        _decide(ALICE, "GET", "/apis/apps/v1/namespaces/prod/deployments/d/scale")[0] == "Request"
    )
    assert _decide(ALICE, "GET", "/api/v1/namespaces/prod/secrets/s1")[0] == "Request"
    assert _decide(ALICE, "GET", "/api/v1/namespaces/prod/secrets/s2")[0] == "Metadata"  # by group
    assert _decide(ALICE, "GET", "/api/v1/namespaces/dev/secrets")[0] == "None"
    level, stages, omit = _decide(UserInfo("bob"), "GET", "/apis")
    assert (level, stages, omit) == ("Metadata", {"RequestReceived", "ResponseComplete"}, True)
    assert _decide(UserInfo("bob"), "GET", "/api/v1/pods")[0] == "None"  # no rule: None


def test_bad_policies_are_refused() -> None:
    with pytest.raises(PolicyError, match="0 rules"):
        parse_policy({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": []})
    with pytest.raises(PolicyError, match='Unsupported value: "Loud"'):
        parse_policy(
            {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{"level": "Loud"}]}
        )


def test_events_escape_like_go_and_decode_objects_in_the_writer() -> None:
    event = {
        "requestURI": "/api?a=1&b=<2>",
        "requestObject": RawObject(
            b'{"metadata":{"name":"x","managedFields":[1]}}', "application/json", True
        ),
        "responseObject": RawObject(b"\x00\x01", "application/octet-stream", False),
    }
    line = encode_event(materialize(event))
    assert line.endswith(b"\n") and b"\\u0026b=\\u003c2\\u003e" in line
    decoded = json.loads(line)
    assert decoded["requestObject"] == {"metadata": {"name": "x"}}  # managedFields omitted
    assert "responseObject" not in decoded  # undecodable: left out


async def test_a_full_buffer_drops_events_instead_of_blocking(tmp_path: Path) -> None:
    backend = LogBackend(str(tmp_path / "audit.log"), buffer_size=2)
    for i in range(5):
        backend.process({"n": i})  # returns at once even with no writer running
    assert backend.dropped == 3
    task = asyncio.create_task(backend.run())
    await asyncio.sleep(0)  # the writer starts; cancelling flushes what is buffered
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert [json.loads(x)["n"] for x in (tmp_path / "audit.log").read_text().splitlines()] == [0, 1]


def test_rotation_keeps_max_backups(tmp_path: Path) -> None:
    f = RotatingFile(str(tmp_path / "audit.log"), max_size_mb=1, max_backups=2, max_age_days=0)
    line = b"x" * (400 * 1024) + b"\n"
    for _ in range(12):
        f.write(line)
    f.close()
    assert len(f.backups()) == 2
    assert (tmp_path / "audit.log").stat().st_size <= 1024 * 1024


def test_audit_ids_are_version_4_uuids_and_timestamps_microseconds() -> None:
    ids = {new_audit_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(uuid.UUID(i).version == 4 and str(uuid.UUID(i)) == i for i in ids)
    assert timestamp(1_796_066_543_123_456_789) == "2026-11-30T19:22:23.123456Z"


async def test_an_event_that_cannot_be_encoded_takes_no_other_with_it(tmp_path: Path) -> None:
    """Upstream writes each event on its own: one bad event is counted and logged with
    its audit ID, the rest of its batch is written; strings that are not UTF-8 (how
    aiohttp keeps a header byte such as ``\\xff``) are written with U+FFFD, as Go's
    encoder writes them."""
    from proxy.audit.log_backend import ERRORS

    errors = ERRORS.labels("log")
    before = errors._value.get()
    backend = LogBackend(str(tmp_path / "audit.log"))
    backend.process({"auditID": "a", "userAgent": "ua\udcff\udcc3\udca8"})
    backend.process({"auditID": "b", "annotations": {"k": object()}})  # no encoder takes it
    backend.process({"auditID": "c", "user": {"username": "\ud800x"}})
    task = asyncio.create_task(backend.run())
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    lines = [json.loads(x) for x in (tmp_path / "audit.log").read_text().splitlines()]
    assert [e["auditID"] for e in lines] == ["a", "c"]
    assert lines[0]["userAgent"] == "ua\ufffd\u00e8" and lines[1]["user"]["username"] == "\ufffdx"
    assert errors._value.get() == before + 1


@pytest.mark.parametrize("metadata", ["x", 5, [1], 1.5, None, {"name": 5}])
def test_a_create_body_whose_metadata_is_no_object_names_nothing(metadata: object) -> None:
    body = json.dumps({"metadata": metadata}).encode()
    event = {
        "objectRef": {"resource": "roles"},
        "_createdBody": RawObject(body, "application/json", False),
    }
    assert materialize(event)["objectRef"] == {"resource": "roles"}


_DECISION_TABLE = [
    (UserInfo("system:kube-proxy", groups=("devs",)), "GET", "/api/v1/pods"),
    (ALICE, "PUT", "/api/v1/namespaces/a/pods/p/status"),
    (ALICE, "GET", "/apis/apps/v1/namespaces/prod/deployments/d/scale"),
    (ALICE, "GET", "/api/v1/namespaces/prod/secrets/s1"),
    (ALICE, "GET", "/api/v1/namespaces/prod/secrets/s2"),
    (ALICE, "GET", "/api/v1/namespaces/dev/secrets"),
    (UserInfo("bob"), "GET", "/apis"),
    (UserInfo("bob"), "GET", "/api/v1/pods"),
]


@pytest.mark.parametrize(("user", "method", "path"), _DECISION_TABLE)
def test_each_rules_decision_is_built_once_and_is_what_the_rule_gives(
    user: UserInfo, method: str, path: str
) -> None:
    """The decisions built at parse time equal the rule's own (its level, the policy's
    omitStages plus its own, its omitManagedFields else the policy's), and a request
    gets the prebuilt object itself (nothing is allocated per request)."""
    policy = parse_policy(POLICY)
    info = parse_request_info(method, path, {})
    decision = policy.decide(user, info)
    assert policy.decide(user, info) is decision
    rule = next((r for r in policy.rules if r.matches(user, info)), None)
    if rule is None:
        assert decision == Decision("None", frozenset(), False)
        return
    omit = rule.omit_managed_fields
    if omit is None:
        omit = policy.omit_managed_fields
    assert decision == Decision(rule.level, policy.omit_stages | rule.omit_stages, omit)


AUDIT_ID = "0f1e2d3c-4b5a-4697-8877-665544332211"


def _event(user: UserInfo, headers: dict[str, str] | None = None) -> AuditEvent:
    request = make_mocked_request("GET", "/api/v1/namespaces/a/pods/p?x=1", headers=headers)
    info = parse_request_info("GET", "/api/v1/namespaces/a/pods/p", {"x": "1"})
    return AuditEvent(request, info, user, "Metadata", AUDIT_ID, False)


def test_shared_parts_encode_to_the_reference_bytes_and_are_never_changed() -> None:
    """Two requests of one user share its ``user`` and a success's ``responseStatus``;
    the lines written are byte for byte the reference encoding of fresh dicts in
    upstream's field order, and a failure's Status is its own (the shared one stays)."""
    first = _event(ALICE, {"User-Agent": "kubectl"})
    second = _event(UserInfo("alice", groups=("devs",)))  # another object, the same user
    assert first.user is second.user
    first.set_status(200, b"{}", "application/json")
    second.set_status(200, None, "")
    assert first.response_status is second.response_status
    line = encode_event(materialize(first.at("ResponseComplete")))
    stage_ts = json.loads(line)["stageTimestamp"]
    reference = {
        "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata",
        "auditID": AUDIT_ID, "stage": "ResponseComplete",
        "requestURI": "/api/v1/namespaces/a/pods/p?x=1", "verb": "get",
        "user": {"username": "alice", "groups": ["devs"]}, "sourceIPs": [],
        "userAgent": "kubectl",
        "objectRef": {"resource": "pods", "namespace": "a", "name": "p", "apiVersion": "v1"},
        "responseStatus": {"metadata": {}, "code": 200},
        "requestReceivedTimestamp": first.received, "stageTimestamp": stage_ts,
    }  # fmt: skip
    assert line == json.dumps(reference, separators=(",", ":")).encode() + b"\n"
    failed = _event(ALICE)
    failed.set_status(404, b'{"kind":"Status","code":404,"reason":"NotFound"}', "application/json")
    assert failed.response_status == {"code": 404, "reason": "NotFound"}
    assert second.response_status == {"metadata": {}, "code": 200}
    with_extra = UserInfo("alice", groups=("devs",), extra={"scopes": ("a",)})
    assert _event(with_extra).user == {
        "username": "alice", "groups": ["devs"], "extra": {"scopes": ["a"]}
    }  # fmt: skip


def test_source_ips_of_a_direct_client_and_of_a_proxied_one() -> None:
    assert _event(ALICE).source_ips == []  # the mocked request has no peer
    proxied = _event(ALICE, {"X-Forwarded-For": "10.0.0.1, 10.0.0.2", "X-Real-Ip": "10.0.0.3"})
    assert proxied.source_ips == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    assert _event(ALICE, {"X-Real-Ip": "10.0.0.3"}).source_ips == ["10.0.0.3"]


def test_an_event_without_objects_is_buffered_as_its_line(tmp_path: Path) -> None:
    """A Metadata event is encoded when buffered (its dicts then die young): the
    buffered bytes are the line the writer would have written; an event with an object
    to decode stays an event for the writer's thread."""
    backend = LogBackend(str(tmp_path / "audit.log"))
    event = _event(ALICE, {"User-Agent": "a<b&c"})
    event.set_status(200, None, "")
    plain = event.at("ResponseComplete")
    backend.process(plain)
    event.request_object = RawObject(b'{"kind":"Pod"}', "application/json", False)
    with_object = event.at("ResponseComplete")
    backend.process(with_object)
    assert list(backend.buffer) == [encode_event(materialize(dict(plain))), with_object]
    assert b"a\\u003cb\\u0026c" in backend.buffer[0]


class _RecordingSink:
    """A sink that tells when it holds ``want`` lines (written from the writer thread)."""

    def __init__(self, want: int) -> None:
        self.lines: list[bytes] = []
        self.want = want
        self.full = threading.Event()

    def write(self, data: bytes) -> None:
        self.lines.extend(data.splitlines())
        if len(self.lines) >= self.want:
            self.full.set()

    def close(self) -> None:
        pass


async def test_the_writer_thread_writes_batches_while_running(tmp_path: Path) -> None:
    """Events buffered while the writer runs are written by its thread without the
    writer being stopped, each once, in order."""
    backend = LogBackend(str(tmp_path / "audit.log"))
    sink = backend.sink = _RecordingSink(1000)  # type: ignore[assignment]
    task = asyncio.create_task(backend.run())
    try:
        for i in range(1000):
            backend.process({"auditID": str(i)})
            if i % 100 == 0:
                await asyncio.sleep(0)
        assert await asyncio.to_thread(sink.full.wait, 10)
        assert not backend.buffer
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert [json.loads(x)["auditID"] for x in sink.lines] == [str(i) for i in range(1000)]
