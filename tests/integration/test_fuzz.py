"""A seeded, bounded fuzz run against a real server on a real etcd (issue 10 §3).

Hostile paths, methods, query parameters, headers, bodies and raw malformed HTTP
(``fuzz_requests.generate``) are sent to a server with the watch cache on. It holds:

- no 5xx, except the 500s kube-apiserver itself answers for the same input: errors it
  hands to ``ErrorToAPIStatus`` as they are (etcd refusing a write as too large, the etcd3
  store's resourceVersion-on-create, a strategic merge patch missing a merge key) are a
  500 *without a reason*; our own unexpected errors carry reason InternalError. A
  genuinely unavailable etcd is not part of this run;
- every JSON error is a ``Status``; every request is answered (no dropped connection)
  within the server's request timeout;
- nothing is logged at ERROR level, no traceback;
- the audit log lost nothing: every answer that carries an ``Audit-Id`` has its events
  in the log, and ``apiserver_audit_error_total`` is 0 (issue 23 §1);
- afterwards the server still serves: CRUD works and a watch delivers.

Size and seed: ``FUZZ_REQUESTS`` (default 300: seconds in ``make test``) and
``FUZZ_SEED`` (default fixed; ``make fuzz`` runs 20,000 with a fresh seed). A failure
names the seed and the request, so a run can be replayed exactly.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import random
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from yarl import URL

from tests.integration.conftest import ServerFactory, ServerProcess, create
from tests.integration.fuzz_requests import NAMESPACE, FuzzRequest, generate

pytestmark = pytest.mark.etcd

FUZZ_REQUESTS = int(os.environ.get("FUZZ_REQUESTS", "300"))
FUZZ_SEED = int(os.environ.get("FUZZ_SEED", "20261130"))
CONCURRENCY = 8
REQUEST_TIMEOUT = 10.0  # the server's --request-timeout for this run
ANSWER_WITHIN = REQUEST_TIMEOUT + 10.0  # a hang is no answer by then
# sent as bytes: aiohttp's client would open a tunnel for CONNECT; aiohttp's server parser
# refuses methods it does not know (400, and the connection is closed under the body)
RAW_METHODS = frozenset({"CONNECT", "FOO"})
RAW_PATIENCE = 3.0  # how long a raw request may go unanswered (it may be incomplete)
WATCH_PATIENCE = 0.5  # how long a fuzzed watch is read
LARGE_BODY = 256 * 1024  # a body this large may take longer than the request timeout


AUDIT_POLICY = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"


@pytest.fixture(params=["cached", "uncached"])
def fuzz_server(
    request: pytest.FixtureRequest, server_factory: ServerFactory, tmp_path: Path
) -> tuple[ServerProcess, Path]:
    """A server with the watch cache (the default), and one with every read from etcd;
    both audit every request at Metadata level (the log's path is returned with it)."""
    cache = "--watch-cache=true" if request.param == "cached" else "--watch-cache=false"
    (tmp_path / "policy.yaml").write_text(AUDIT_POLICY)
    audit = (f"--audit-policy-file={tmp_path / 'policy.yaml'}",
             f"--audit-log-path={tmp_path / 'audit.log'}")  # fmt: skip
    server = server_factory(f"--request-timeout={REQUEST_TIMEOUT:g}s", cache, *audit)
    return server, tmp_path / "audit.log"


async def _seed(http: aiohttp.ClientSession) -> None:
    """The namespace most fuzzed paths point into, with objects to GET/PATCH/DELETE."""
    await create(http, "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    await create(http, f"/api/v1/namespaces/{NAMESPACE}/configmaps", {"metadata": {"name": "cm0"}})
    pod = {"metadata": {"name": "p0"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    await create(http, f"/api/v1/namespaces/{NAMESPACE}/pods", pod)


def _problem(request: FuzzRequest, status: int, content_type: str, body: bytes) -> str:
    """What is wrong with an answer, or ""."""
    if status >= 500:
        try:
            reason = str(orjson.loads(body).get("reason", "") or "")
        except (orjson.JSONDecodeError, AttributeError):
            reason = "unreadable"
        if status == 500 and not reason:
            return ""  # kube-apiserver's own answer for an error it passes on as it is
        if status == 504 and reason == "Timeout" and len(request.body) > LARGE_BODY:
            return ""  # a hostile body decoded beside the loop may outlast this run's 10 s
        return f"{status}: {body[:300]!r}"
    if status >= 400 and content_type == "application/json" and request.method != "HEAD":
        try:
            decoded: Any = orjson.loads(body)
        except orjson.JSONDecodeError:
            return f"{status} with a JSON content type and an undecodable body {body[:200]!r}"
        if not isinstance(decoded, dict) or decoded.get("kind") != "Status":
            return f"{status} error that is not a Status: {body[:200]!r}"
    return ""


async def _send(
    http: aiohttp.ClientSession, url: str, request: FuzzRequest, audit_ids: list[str]
) -> str:
    async with asyncio.timeout(ANSWER_WITHIN):
        async with http.request(
            request.method,
            URL(url + request.target, encoded=True),
            headers=request.headers,
            data=io.BytesIO(request.body) if request.body else None,
            skip_auto_headers=("Content-Type",),
            auto_decompress=False,
        ) as resp:
            if "Audit-Id" in resp.headers:
                audit_ids.append(resp.headers["Audit-Id"])
            if request.is_watch and resp.status == 200:
                # the stream is open: that is the answer; an event, if one comes, is read
                # so that its encoding (Table, metadata, YAML) runs too
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(WATCH_PATIENCE):
                        await resp.content.readline()
                return ""
            body = await resp.read()
            return _problem(request, resp.status, resp.content_type, body)


def _serialized(request: FuzzRequest) -> bytes:
    """The request as bytes (for ``RAW_METHODS``)."""
    headers = {"Host": "fuzz", **request.headers, "Content-Length": str(len(request.body))}
    lines = [f"{request.method} {request.target} HTTP/1.1"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace") + request.body


def _raw_audit_id(answer: bytes) -> str | None:
    head = answer.partition(b"\r\n\r\n")[0].decode("utf-8", "replace")
    for line in head.split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "audit-id":
            return value.strip()
    return None


async def _send_raw(url: str, request: FuzzRequest, audit_ids: list[str]) -> str:
    host, port = URL(url).host or "", URL(url).port or 0
    reader, writer = await asyncio.open_connection(host, port)
    try:
        async with asyncio.timeout(ANSWER_WITHIN):
            try:
                writer.write(request.raw or _serialized(request))
                await writer.drain()
            except ConnectionError:
                pass  # refused mid-way (a header over the limit): read what it said
            try:
                async with asyncio.timeout(RAW_PATIENCE):
                    answer = await reader.read(64 * 1024)
            except ConnectionError:
                return ""
            except TimeoutError:
                # an incomplete request (random bytes, a body shorter than declared): the
                # server waits for the rest, as Go's does
                return ""
    finally:
        writer.close()
    audit_id = _raw_audit_id(answer)
    if audit_id is not None:
        audit_ids.append(audit_id)
    parts = answer.split(b" ", 2)
    if len(parts) > 1 and parts[1][:1] == b"5":
        # judged as any other answer: a 500 without a reason is upstream's own (a
        # create that sets resourceVersion), whichever way the request was sent
        head, _, body = answer.partition(b"\r\n\r\n")
        json_body = b"application/json" in head.lower()
        status = int(parts[1]) if parts[1].isdigit() else 599
        problem = _problem(request, status, "application/json" if json_body else "", body)
        return f"raw answer {answer[:200]!r}: {problem}" if problem else ""
    return ""


async def _run(
    server: ServerProcess, requests: list[FuzzRequest], audit_ids: list[str]
) -> list[str]:
    limit = asyncio.Semaphore(CONCURRENCY)
    connector = aiohttp.TCPConnector(limit=CONCURRENCY)
    async with aiohttp.ClientSession(base_url=server.url) as seeding:
        await _seed(seeding)
    async with aiohttp.ClientSession(connector=connector) as http:

        async def one(index: int, request: FuzzRequest) -> str:
            async with limit:
                try:
                    if request.raw or request.method in RAW_METHODS:
                        problem = await _send_raw(server.url, request, audit_ids)
                    else:
                        problem = await _send(http, server.url, request, audit_ids)
                except TimeoutError:
                    problem = f"no answer within {ANSWER_WITHIN:g} s"
                except aiohttp.ClientError as e:
                    problem = f"no answer: {type(e).__name__}: {e}"
            return f"#{index} {request.describe()}: {problem}" if problem else ""

        results = await asyncio.gather(*(one(i, r) for i, r in enumerate(requests)))
    return [r for r in results if r]


async def _still_serves(server: ServerProcess) -> None:
    """CRUD and a watch, on a fresh namespace."""
    ns = f"after-{uuid.uuid4().hex[:8]}"
    path = f"/api/v1/namespaces/{ns}/configmaps"
    async with aiohttp.ClientSession(base_url=server.url) as http:
        async with http.get("/readyz") as resp:
            assert resp.status == 200, await resp.text()
        await create(http, "/api/v1/namespaces", {"metadata": {"name": ns}})
        async with http.get(path + "?watch=1&timeoutSeconds=20") as watch:
            assert watch.status == 200
            await create(http, path, {"metadata": {"name": "after"}, "data": {"k": "v"}})
            async with asyncio.timeout(10):
                event = orjson.loads(await watch.content.readline())
        assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "after")
        patch = {"data": {"k": "w"}}
        headers = {"Content-Type": "application/merge-patch+json"}
        async with http.patch(f"{path}/after", data=orjson.dumps(patch), headers=headers) as r:
            assert r.status == 200 and (await r.json())["data"] == {"k": "w"}
        async with http.delete(f"{path}/after") as resp:
            assert resp.status == 200
        async with http.get(path) as resp:
            assert (await resp.json())["items"] == []


async def _audit_lost(server: ServerProcess, log: Path, audit_ids: list[str]) -> list[str]:
    """The audit IDs of answered requests that have no event in the log (waiting for the
    writer a little), and a non-zero apiserver_audit_error_total."""
    wanted = set(audit_ids)
    missing = wanted
    for _ in range(100):
        missing = wanted - _audited(log)
        if not missing:
            break
        await asyncio.sleep(0.1)
    lost = [f"no audit event for {audit_id!r}" for audit_id in sorted(missing)]
    async with aiohttp.ClientSession(base_url=server.url) as http, http.get("/metrics") as resp:
        metrics = await resp.text()
    errors = [
        line
        for line in metrics.splitlines()
        if line.startswith("apiserver_audit_error_total") and float(line.split()[-1])
    ]
    return lost + errors


def _audited(log: Path) -> set[str]:
    lines = log.read_bytes().splitlines() if log.exists() else []
    return {orjson.loads(line)["auditID"] for line in lines}


@pytest.mark.timeout(max(120, FUZZ_REQUESTS // 5))
async def test_fuzz(fuzz_server: tuple[ServerProcess, Path]) -> None:
    server, audit_log = fuzz_server
    rng = random.Random(FUZZ_SEED)
    requests = [generate(rng) for _ in range(FUZZ_REQUESTS)]
    audit_ids: list[str] = []
    problems = await _run(server, requests, audit_ids)
    assert not problems, f"FUZZ_SEED={FUZZ_SEED}:\n" + "\n".join(problems[:20])
    assert server.running, server.log()
    lost = await _audit_lost(server, audit_log, audit_ids)
    assert not lost, f"FUZZ_SEED={FUZZ_SEED}:\n" + "\n".join(lost[:20])
    await _still_serves(server)
    errors = _logged_errors(server.log())
    assert not errors, f"FUZZ_SEED={FUZZ_SEED}:\n" + "\n".join(errors[:10])


def _logged_errors(log: str) -> list[str]:
    """Each ERROR record (or traceback) of the server log, with the lines after it."""
    lines = log.splitlines()
    found = [i for i, line in enumerate(lines) if " ERROR " in line or "Traceback" in line]
    return ["\n".join(lines[i : i + 25]) for i in found]
