"""``watchcache serve --workers N``: N serving processes on the same ports, each a whole
server (its own watch cache over the same etcd, its own handler chain), as N
kube-apiserver replicas behind a balancer would be, the kernel balancing connections
between them (SO_REUSEPORT). See docs/workers.md.

This module is the supervisor, the process ``watchcache serve`` becomes with N > 1:

- it checks the ports are free and holds them (bound, not listening: the kernel hands
  connections only to listening sockets) so that a worker restarted later gets them
  back, and resolves a port 0 to one concrete port for every worker;
- it starts each worker as ``python -m proxy.cli serve ARGV --port=P --secure-port=S``
  with ``WATCHCACHE_WORKER=K/N`` (``proxy.server.worker``), its stdin a pipe (the
  worker stops when the pipe ends: the supervisor's death, even by SIGKILL, leaves no
  orphan) and its stdout read here: each worker's "serving on" lines are folded into
  the supervisor's one "serving on" line per port, printed once every worker listens;
- a worker that dies is started again after a jittered exponential backoff (0.5 s
  doubling to 8 s; a run of 60 s starts the sequence again); a worker that fails before
  the server ever listened (a taken port, a bad flag) fails the whole start with its
  exit code;
- SIGTERM or SIGINT stops every worker with SIGTERM (each drains its requests within
  ``--shutdown-timeout``) and SIGKILLs what is left 10 s after that.

With N = 1 (the default) ``watchcache serve`` is the single server of
``proxy.app.server``, with no supervisor.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import signal
import socket
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from proxy.apimachinery.wait import Backoff
from proxy.server import event_loop
from proxy.server.port_in_use import EXIT_PORT_IN_USE, PortInUse
from proxy.server.secure_serving import serving_cert_paths
from proxy.server.settings import ConfigError, Settings, load_settings
from proxy.server.worker import INSTANCE_ID_ENV, MAX_DEFAULT_WORKERS, WORKER_ENV, usable_cores

__all__ = ["Supervisor", "main", "worker_count"]

log = logging.getLogger("watchcache.workers")

# how long after --shutdown-timeout a worker may take to exit before SIGKILL
KILL_GRACE = 10.0
# a worker's start-up: until every worker has printed its "serving on" lines
START_TIMEOUT = 120.0


def worker_count(settings: Settings) -> int:
    """``--workers``, 0 meaning one per usable core, at most ``MAX_DEFAULT_WORKERS``."""
    return settings.workers or min(usable_cores(), MAX_DEFAULT_WORKERS)


def _hold_port(host: str, port: int, flag: str) -> socket.socket:
    """Bind ``host``:``port`` (0: a free one) and keep it bound for the workers.

    A first bind without SO_REUSEPORT proves nobody holds the port (with SO_REUSEPORT
    alone, a bind would join another server's listeners of the same user)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    probe = socket.socket(family, socket.SOCK_STREAM)
    try:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((host, port))
        port = int(probe.getsockname()[1])
    except OSError as e:
        probe.close()
        if e.errno == errno.EADDRINUSE:
            raise PortInUse.of(e, host, port, flag) from e
        raise
    probe.close()
    held = socket.socket(family, socket.SOCK_STREAM)
    held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    held.bind((host, port))
    return held


@dataclass
class Worker:
    """One worker process and what the supervisor knows of it."""

    index: int
    process: asyncio.subprocess.Process | None = None
    restarts: int = 0
    # "serving on" lines of its current run (the shared ports' URLs)
    serving: list[str] = field(default_factory=list)
    listening: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class Supervisor:
    """Starts, watches and stops the workers (see the module docstring)."""

    argv: Sequence[str]
    settings: Settings
    count: int
    backoff: Backoff = field(default_factory=Backoff)
    stopping: bool = False
    workers: list[Worker] = field(default_factory=list)
    ports: dict[str, int] = field(default_factory=dict)
    # one server instance (``X-Watchcache-Instance``) however many workers answer
    instance: str = field(
        default_factory=lambda: os.environ.get(INSTANCE_ID_ENV) or uuid.uuid4().hex
    )

    def hold_ports(self) -> list[socket.socket]:
        held: list[socket.socket] = []
        try:
            if self.settings.port is not None:
                host = self.settings.insecure_bind_address or self.settings.bind_address
                held.append(_hold_port(host, self.settings.port, "--port"))
                self.ports["--port"] = int(held[-1].getsockname()[1])
            if self.settings.secure_port is not None:
                host = self.settings.bind_address
                held.append(_hold_port(host, self.settings.secure_port, "--secure-port"))
                self.ports["--secure-port"] = int(held[-1].getsockname()[1])
        except BaseException:
            for sock in held:
                sock.close()
            raise
        return held

    def command(self) -> list[str]:
        ports = [f"{flag}={port}" for flag, port in self.ports.items()]
        return [sys.executable, "-m", "proxy.cli", "serve", *self.argv, *ports]

    async def spawn(self, worker: Worker) -> None:
        worker.serving.clear()
        worker.listening.clear()
        env = {**os.environ, WORKER_ENV: f"{worker.index}/{self.count}",
               INSTANCE_ID_ENV: self.instance}  # fmt: skip
        worker.process = await asyncio.create_subprocess_exec(
            *self.command(), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            env=env,
        )  # fmt: skip
        log.info("worker %d started (pid %d)", worker.index, worker.process.pid)

    async def relay(self, worker: Worker) -> None:
        """Forward the worker's stdout byte for byte (``--audit-log-path=-`` writes
        there: lines of any length), keeping its "serving on" lines (the shared ports')
        for the supervisor's own."""
        process = worker.process
        assert process is not None and process.stdout is not None
        out = sys.stdout.buffer
        while chunk := await _next_line(process.stdout):
            if chunk.startswith(b"serving on "):
                worker.serving.append(chunk.decode(errors="replace").rstrip("\n"))
                if len(worker.serving) == len(self.ports):
                    worker.listening.set()
                continue
            out.write(chunk)
            out.flush()

    async def run(self, stop: asyncio.Event) -> int:
        """Start every worker, print "serving on" once all listen, keep them running
        until ``stop``; the exit code."""
        self.workers = [Worker(k) for k in range(1, self.count + 1)]
        async with asyncio.TaskGroup() as group:
            for worker in self.workers:
                await self.spawn(worker)
            watchers = [group.create_task(self.watch(w)) for w in self.workers]
            code = await self.wait_listening(watchers, stop)
            if code == 0:
                for line in self.workers[0].serving:
                    print(line, flush=True)
                await stop.wait()
            await self.stop_all()
            for task in watchers:
                task.cancel()
        return code

    async def wait_listening(self, watchers: list[asyncio.Task[int]], stop: asyncio.Event) -> int:
        """0 once every worker listens; a worker's exit code if one ends first."""
        listening = [asyncio.ensure_future(w.listening.wait()) for w in self.workers]
        stopped = asyncio.ensure_future(stop.wait())
        try:
            async with asyncio.timeout(START_TIMEOUT):
                while not all(f.done() for f in listening):
                    pending = [f for f in listening if not f.done()]
                    await asyncio.wait([*pending, *watchers, stopped],
                                       return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
                    failed = [t for t in watchers if t.done()]
                    if failed:
                        return failed[0].result() or 1
                    if stopped.done():
                        return 0
        except TimeoutError:
            log.error("the workers did not listen within %.0fs", START_TIMEOUT)
            return 1
        finally:
            for f in (*listening, stopped):
                f.cancel()
        return 0

    async def watch(self, worker: Worker) -> int:
        """Relay the worker's output and restart it when it dies; during the start, its
        exit code ends the watch (the start failed)."""
        attempt = 0
        while True:
            began = time.monotonic()
            relay = asyncio.ensure_future(self.relay(worker))
            assert worker.process is not None
            try:
                code = await worker.process.wait()
                await relay  # the rest of its output
            finally:
                relay.cancel()
            if self.stopping:
                return 0
            if not worker.listening.is_set() and worker.restarts == 0:
                log.error("worker %d exited with %d before it listened", worker.index, code)
                return code
            if time.monotonic() - began >= self.backoff.reset_after:
                attempt = 0
            delay = self.backoff.delay(attempt)
            attempt += 1
            log.warning("worker %d exited with %d: restarting it in %.1fs",
                        worker.index, code, delay)  # fmt: skip
            await asyncio.sleep(delay)
            if self.stopping:
                return 0
            worker.restarts += 1
            await self.spawn(worker)

    async def stop_all(self) -> None:
        """SIGTERM every worker, SIGKILL those still running after the grace."""
        self.stopping = True
        running = [w.process for w in self.workers if w.process and w.process.returncode is None]
        for process in running:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
        grace = self.settings.shutdown_timeout + KILL_GRACE
        for process in running:
            try:
                async with asyncio.timeout(grace):
                    await process.wait()
            except TimeoutError:
                log.error("worker pid %d did not stop within %.0fs: killed", process.pid, grace)
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()


async def _next_line(stream: asyncio.StreamReader) -> bytes:
    """The next line with its newline; a line longer than the stream's buffer comes in
    pieces (never dropped, as ``readline`` drops it); b"" at the end."""
    try:
        return await stream.readuntil(b"\n")
    except asyncio.IncompleteReadError as e:
        return e.partial
    except asyncio.LimitOverrunError as e:
        return await stream.read(e.consumed)


async def supervise(argv: Sequence[str], settings: Settings, count: int) -> int:
    """Hold the ports, run the workers until SIGINT/SIGTERM; the exit code."""
    supervisor = Supervisor(argv, settings, count)
    if settings.secure_port is not None:
        serving_cert_paths(settings)  # generated once here, not raced by the workers
    held = supervisor.hold_ports()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        return await supervisor.run(stop)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        for sock in held:
            sock.close()


def main(argv: Sequence[str]) -> int:
    """``watchcache serve``: the supervisor of ``--workers`` N > 1, else the server
    (imported only then: the supervisor stays small, ~50 MB less than a server)."""
    try:
        settings = load_settings(argv)
        count = worker_count(settings)
    except ConfigError:
        count = 1  # the server says what is wrong, as it always did
    if count <= 1 or WORKER_ENV in os.environ:
        from proxy.app import server

        return server.main(argv)
    logging.basicConfig(
        level=getattr(logging, settings.log_level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    with contextlib.suppress(KeyboardInterrupt):
        try:
            return event_loop.run(supervise(argv, settings, count), "asyncio")
        except ConfigError as e:
            print(f"watchcache serve: {e}", file=sys.stderr)
            return 2
        except PortInUse as e:
            print(f"watchcache serve: {e.strerror}", file=sys.stderr)
            return EXIT_PORT_IN_USE
    return 0
