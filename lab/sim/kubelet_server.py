"""A simulated node's kubelet API (``pkg/kubelet/server``): HTTPS on the node's
address, what kube-apiserver proxies ``pods/log``, ``exec``, ``attach``,
``portforward`` and ``nodes/proxy`` to.

- ``GET /containerLogs/NS/POD/CONTAINER`` (``follow``, ``previous``, ``timestamps``,
  ``sinceSeconds``, ``sinceTime``, ``tailLines``, ``limitBytes``): the container's log
  (:mod:`lab.sim.container_logs`);
- ``/exec/NS/POD/CONTAINER?command=...`` and ``/attach/NS/POD/CONTAINER`` over
  WebSocket (:mod:`lab.sim.remotecommand`): the simulated shell
  (:mod:`lab.sim.shell`); ``attach`` joins the container's main process: a shell when
  the container was started with ``stdin``, else its log output as it is written;
- ``/portForward/NS/POD`` (:mod:`lab.sim.portforward`): a tiny HTTP responder on
  each port the pod's containers declare;
- ``GET /healthz``, ``GET /pods`` (the node's pods, as a PodList).

Authentication: a client certificate signed by the cluster CA (the kubelet's
``--client-ca-file``); anonymous requests get 401. Authorization: the kubelet maps the
request to ``nodes/proxy`` (``get`` for GET, ``create`` for POST...) and, as the
``system:kubelet-api-admin`` binding kubeadm makes for the API server's client
certificate, allows it to ``system:masters`` and to ``kube-apiserver-kubelet-client``;
anyone else is 403 (the real kubelet asks the API server with a SubjectAccessReview;
the simulated cluster talks to the lab's plain port, which serves none).

The serving certificate is self-signed per node (the kubelet's default without
``serverTLSBootstrap``); the API server does not check it unless given
``--kubelet-certificate-authority``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import orjson
from aiohttp import web

from lab.sim.client import JSON
from lab.sim.container_logs import Instance, format_line, instance_lines, parse_time
from lab.sim.containers import Runtime, container_spec, environment, instances
from lab.sim.portforward import serve_port_forward
from lab.sim.remotecommand import serve_stream
from lab.sim.shell import Shell, StdIO
from proxy.server.certs import new_ca, sign

__all__ = ["ALLOWED_GROUPS", "ALLOWED_USERS", "KubeletServer"]

ALLOWED_USERS = frozenset({"kube-apiserver-kubelet-client", "system:kube-apiserver"})
ALLOWED_GROUPS = frozenset({"system:masters"})
_VERBS = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch",
          "DELETE": "delete"}  # fmt: skip
_FOLLOW_POLL = 0.5  # seconds between looks for a followed container's new lines


# (pod key, container, exit code): an attached container's main process ended
MainExited = Callable[[str, str, int], Awaitable[None]]


class Pods(Protocol):
    """The node's pods (its informer): by key ``NS/NAME``, and all of them."""

    def get(self, key: str) -> JSON | None: ...

    def items(self) -> list[JSON]: ...



def _text(status: int, message: str) -> web.Response:
    """The kubelet's errors: Go's ``http.Error`` (plain text and a newline)."""
    return web.Response(status=status, text=message + "\n", content_type="text/plain")


class KubeletServer:
    """The kubelet API of node ``node`` over the pods ``pods`` returns by key
    (``NS/NAME``), with ``runtime`` for the containers' filesystems."""

    def __init__(
        self, node: str, pods: Pods, runtime: Runtime, client_ca: str, on_exit: MainExited
    ) -> None:
        self.node = node
        self.on_exit = on_exit
        self.pods = pods
        self.runtime = runtime
        self.client_ca = client_ca
        self.port = 0
        self._runner: web.AppRunner | None = None

    async def start(self, host: str) -> int:
        """Listen on ``host`` (a free port); the port."""
        app = web.Application(middlewares=[self._authorize])
        app.router.add_get("/healthz", _healthz)
        app.router.add_get("/pods", self._pod_list)
        app.router.add_get("/containerLogs/{ns}/{pod}/{container}", self._logs)
        for verb in ("exec", "attach"):
            for method in ("GET", "POST"):
                app.router.add_route(method, f"/{verb}/{{ns}}/{{pod}}/{{container}}",
                                     self._stream)  # fmt: skip
        for method in ("GET", "POST"):
            app.router.add_route(method, "/portForward/{ns}/{pod}", self._port_forward)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind((host, 0))
        self.port = sock.getsockname()[1]
        site = web.SockSite(self._runner, sock, ssl_context=self._tls(host))
        await site.start()
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def _tls(self, host: str) -> ssl.SSLContext:
        stamp = int(time.time())
        ca = new_ca(f"{self.node}-ca@{stamp}")
        served = sign(ca, f"{self.node}@{stamp}", dns_names=(self.node,), ips=(host,),
                      server=True)  # fmt: skip
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with tempfile.TemporaryDirectory() as d:
            cert, key = Path(d) / "kubelet.crt", Path(d) / "kubelet.key"
            cert.write_bytes(served.cert_pem + ca.cert_pem)
            key.write_bytes(served.key_pem)
            ctx.load_cert_chain(cert, key)
        ctx.load_verify_locations(cadata=self.client_ca)
        ctx.verify_mode = ssl.CERT_OPTIONAL  # anonymous: answered 401, not refused
        return ctx

    # -- authentication and authorization ---------------------------------------------------

    @web.middleware
    async def _authorize(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        if not peer:
            return _text(401, "Unauthorized")
        user, groups = _identity(peer)
        verb = _VERBS.get(request.method, request.method.lower())
        if user not in ALLOWED_USERS and not ALLOWED_GROUPS & set(groups):
            return _text(403, f"Forbidden (user={user}, verb={verb}, resource=nodes, "
                              "subresource(s)=[proxy])")  # fmt: skip
        return await handler(request)

    # -- pods -------------------------------------------------------------------------------

    def _pod(self, request: web.Request) -> JSON | None:
        return self.pods.get(f"{request.match_info['ns']}/{request.match_info['pod']}")

    async def _pod_list(self, request: web.Request) -> web.Response:
        body = {"kind": "PodList", "apiVersion": "v1", "metadata": {},
                "items": list(self.pods.items())}  # fmt: skip
        return web.Response(body=orjson.dumps(body), content_type="application/json")

    # -- logs -------------------------------------------------------------------------------

    async def _logs(self, request: web.Request) -> web.StreamResponse:
        pod = self._pod(request)
        ns, name, container = (request.match_info[k] for k in ("ns", "pod", "container"))
        if pod is None:
            return _text(404, f'pod "{name}" not found')
        if container_spec(pod, container) is None:
            return _text(400, f'container "{container}" in pod "{name}" is not available')
        current, previous, waiting = instances(pod, container)
        q = request.query
        if q.get("previous") == "true":
            if previous is None:
                return _text(400, f'previous terminated container "{container}" in pod '
                                  f'"{name}" not found')  # fmt: skip
            current = previous
        if current is None:
            reason = waiting or "ContainerCreating"
            return _text(400, f'container "{container}" in pod "{name}" is waiting to start: '
                              f"{reason}")  # fmt: skip
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        with contextlib.suppress(ConnectionResetError):
            async for chunk in _log_chunks(current, q, lambda: self._live(ns, name, current)):
                await response.write(chunk)
            await response.write_eof()
        return response

    def _live(self, ns: str, name: str, inst: Instance) -> bool:
        """Whether the followed run still runs (the pod is there, the same run)."""
        pod = self.pods.get(f"{ns}/{name}")
        if pod is None or (pod.get("metadata") or {}).get("deletionTimestamp"):
            return False
        current, _, _ = instances(pod, inst.name)
        return current is not None and current.key == inst.key and current.finished is None

    # -- port-forward ---------------------------------------------------------------------

    async def _port_forward(self, request: web.Request) -> web.StreamResponse:
        pod = self._pod(request)
        if pod is None:
            name = request.match_info["pod"]
            return _text(404, f'pod "{name}" not found')
        return await serve_port_forward(request, pod)

    # -- exec and attach ------------------------------------------------------------------

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        pod = self._pod(request)
        name, container = request.match_info["pod"], request.match_info["container"]
        if pod is None:
            return _text(404, f'pod "{name}" not found')
        spec = container_spec(pod, container)
        current, _, _ = instances(pod, container)
        if spec is None or current is None or current.finished is not None:
            return _text(404, f'container not found ("{container}")')
        q = request.query
        stdin, tty = q.get("stdin") in ("1", "true"), q.get("tty") in ("1", "true")
        fs = await self.runtime.filesystem(pod, container)
        shell = Shell(fs, environment(pod, spec), str((pod.get("metadata") or {}).get("name")))
        if request.path.startswith("/exec/"):
            command = q.getall("command", [])
            return await serve_stream(request, lambda io: shell.run(command, io), command,
                                      stdin=stdin, tty=tty)  # fmt: skip
        ns = request.match_info["ns"]
        if spec.get("stdin") and stdin:  # the main process reads stdin: a shell

            async def main(io: StdIO) -> int:
                code = await shell.run(["sh"], io)
                await self.on_exit(f"{ns}/{name}", container, code)
                return code

            return await serve_stream(request, main, ["sh"], stdin=True, tty=tty)

        async def follow(io: StdIO) -> int:
            async for chunk in _follow_only(current, lambda: self._live(ns, name, current)):
                await io.out(chunk)
            return 0

        return await serve_stream(request, follow, [], stdin=stdin, tty=tty)


async def _healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok")


def _identity(peer: dict[str, Any]) -> tuple[str, list[str]]:
    """(CN, [O...]) of a client certificate as ``ssl`` decodes it."""
    user, groups = "", []
    for rdn in peer.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                user = str(value)
            elif key == "organizationName":
                groups.append(str(value))
    return user, groups


def _since(q: Mapping[str, str]) -> float | None:
    if q.get("sinceSeconds"):
        return time.time() - int(q["sinceSeconds"])
    if q.get("sinceTime"):
        return parse_time(q["sinceTime"])
    return None


async def _log_chunks(
    inst: Instance, q: Mapping[str, str], live: Callable[[], bool]
) -> AsyncIterator[bytes]:
    """The log as the kubelet's ``ReadLogs`` serves it: the lines since ``sinceTime``,
    the last ``tailLines``, at most ``limitBytes``; then, with ``follow``, new lines as
    they are written until the run ends or the client leaves."""
    get = q.get
    timestamps, follow = get("timestamps") == "true", get("follow") == "true"
    limit = int(q["limitBytes"]) if get("limitBytes") else None
    since = _since(q)
    now = time.time()
    lines = [(t, s) for t, s in instance_lines(inst, now) if since is None or t >= since]
    if get("tailLines"):
        tail = int(q["tailLines"])
        lines = lines[len(lines) - tail:] if tail else []
    sent = 0
    for t, text in lines:
        data = format_line(t, text, timestamps).encode()
        if limit is not None and sent + len(data) > limit:
            yield data[: limit - sent]
            return
        sent += len(data)
        yield data
    if not follow:
        return
    async for data in _follow_only(inst, live, timestamps, now):
        if limit is not None and sent + len(data) > limit:
            yield data[: limit - sent]
            return
        sent += len(data)
        yield data


async def _follow_only(
    inst: Instance, live: Callable[[], bool], timestamps: bool = False, since: float | None = None
) -> AsyncIterator[bytes]:
    """The lines ``inst`` writes from now (or ``since``) on, as they are written."""
    last = time.time() if since is None else since
    while live():
        await asyncio.sleep(_FOLLOW_POLL)
        now = time.time()
        for t, text in instance_lines(inst, now, after=last):
            yield format_line(t, text, timestamps).encode()
        last = now
