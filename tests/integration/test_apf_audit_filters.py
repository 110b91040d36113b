"""The audit and priority-and-fairness filters in the handler chain, on a loopback
aiohttp server with test handlers (no etcd): a handler bug is audited at the Panic
stage, a client's Audit-ID is kept, and a WATCH frees its seats once its response
has started while it keeps streaming."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from aiohttp.typedefs import Handler

from proxy.audit.server import Audit
from proxy.endpoints import responsewriter
from proxy.flowcontrol.server import FlowControl
from proxy.informer import SharedInformerFactory
from proxy.options.settings import Settings
from proxy.request.user import USER_KEY, UserInfo
from proxy.server.filters import handler_chain
from proxy.server.post_start_hooks import PostStartHooks

ALICE = UserInfo("alice", groups=("system:authenticated",))


@web.middleware
async def as_alice(request: web.Request, handler: Handler) -> web.StreamResponse:
    request[USER_KEY] = ALICE  # what the authentication filter would store
    return await handler(request)


class Handlers:
    def __init__(self) -> None:
        self.streaming = asyncio.Event()
        self.release = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("watch"):
            response = web.StreamResponse()
            await response.prepare(request)
            await response.write(b'{"type":"BOOKMARK"}\n')
            self.streaming.set()
            await self.release.wait()
            return response
        if request.path.endswith("/boom"):
            raise KeyError("boom")
        return web.json_response({"kind": "Pod"})


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[TestServer, Handlers, Path, FlowControl]]:
    (tmp_path / "policy.yaml").write_text(
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"
    )
    settings = Settings(
        etcd_servers=("http://127.0.0.1:1",),
        audit_policy_file=str(tmp_path / "policy.yaml"),
        audit_log_path=str(tmp_path / "audit.log"),
    )
    audit = Audit.build(settings)
    flow_control = FlowControl.build(settings)
    assert audit is not None and flow_control is not None
    app = web.Application(middlewares=handler_chain(
        settings, authentication=[as_alice], audit=audit.middleware(),
        flowcontrol=flow_control.middleware(),
    ))  # fmt: skip
    responsewriter.install(app)
    audit.install(app)
    flow_control.install(app, lambda group, plural: None, PostStartHooks(),  # none started
                         SharedInformerFactory(lambda g, r: None))  # fmt: skip
    handlers = Handlers()
    app.router.add_route("*", "/api/{tail:.+}", handlers.handle)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield server, handlers, tmp_path / "audit.log", flow_control
    finally:
        handlers.release.set()
        await server.close()


def _lines(log: Path) -> list[bytes]:
    return log.read_bytes().splitlines() if log.exists() else []


async def _events(log: Path, audit_id: str, count: int) -> list[dict[str, object]]:
    for _ in range(200):
        lines = await asyncio.to_thread(_lines, log)
        found = [e for e in map(orjson.loads, lines) if e["auditID"] == audit_id]
        if len(found) >= count:
            return found
        await asyncio.sleep(0.05)
    return found


async def test_a_bug_is_audited_at_the_panic_stage_with_the_clients_audit_id(
    served: tuple[TestServer, Handlers, Path, FlowControl],
) -> None:
    server, _, log, _ = served
    url = f"http://127.0.0.1:{server.port}/api/v1/namespaces/ns/pods/boom"
    async with aiohttp.ClientSession() as s, s.get(url, headers={"Audit-ID": "my-id"}) as r:
        assert r.status == 500 and r.headers["Audit-Id"] == "my-id"
    events = await _events(log, "my-id", 2)
    assert [e["stage"] for e in events] == ["RequestReceived", "Panic"]
    assert events[1]["responseStatus"] == {
        "metadata": {}, "status": "Failure", "message": "APIServer panic'd: 'boom'",
        "reason": "InternalError", "code": 500,
    }  # fmt: skip


async def test_a_watch_frees_its_seats_once_its_response_started(
    served: tuple[TestServer, Handlers, Path, FlowControl],
) -> None:
    server, handlers, log, flow_control = served
    level = flow_control.controller.levels["catch-all"]  # alice's, before any informer
    url = f"http://127.0.0.1:{server.port}/api/v1/namespaces/ns/pods?watch=1"
    async with aiohttp.ClientSession() as s, s.get(url) as r:
        assert r.headers["X-Kubernetes-PF-PriorityLevel-UID"] == ""  # built-in: no uid yet
        await handlers.streaming.wait()
        assert level.queue_set.dispatched == 1
        assert level.queue_set.seats_in_use == 0, "the watch streams without holding a seat"
        audit_id = r.headers["Audit-Id"]
        handlers.release.set()
        await r.read()
    stages = [e["stage"] for e in await _events(log, audit_id, 3)]
    assert stages == ["RequestReceived", "ResponseStarted", "ResponseComplete"]
