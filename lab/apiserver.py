"""``watchcache serve`` as a subprocess: start on a free port, wait until it listens or is
ready, stop by PID, read its log.

The one launcher of the server: the lab, the demos, the benchmark and the test suites
talk to the server only through its command line and HTTP, as a user would, so they
exercise exactly what ships. Synchronous, like :mod:`lab.etcd`; async callers wrap
``start``/``stop`` in ``asyncio.to_thread``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lab.etcd import free_port
from lab.process import stop_process

__all__ = ["EVENT_LOOP_ENV", "APIServer", "PortTaken", "ServerNotReady", "cli_command",
           "serve_command", "with_event_loop"]

# The server runs from the checkout this module belongs to, so ``python -m proxy.cli``
# imports the same packages as its caller (a worktree's, not an installed copy's).
REPO = Path(__file__).resolve().parent.parent


# The server's answer names its instance, and its exit code says "port taken"
# (proxy.app.server's constants; literals here so the launcher does not import the server).
INSTANCE_HEADER = "X-Watchcache-Instance"
INSTANCE_ID_ENV = "WATCHCACHE_INSTANCE_ID"
# Every launched server on this event loop (``--event-loop=``) unless its flags name one:
# how a whole suite runs on uvloop before uvloop can become a default (docs/performance.md)
EVENT_LOOP_ENV = "WATCHCACHE_EVENT_LOOP"
EXIT_PORT_IN_USE = 3


class ServerNotReady(RuntimeError):
    """The server exited or did not answer in time; the message ends with its log."""


class PortTaken(ServerNotReady):
    """The server could not listen: another process holds its port."""

    def __init__(self, port: int, log_tail: str) -> None:
        super().__init__(f"port {port} is already in use by another process, so the "
                         f"server could not start; {log_tail}")  # fmt: skip
        self.port = port


def cli_command(*args: str, python: str = sys.executable) -> list[str]:
    """The argv that runs the ``watchcache`` command line (``args`` after it) with
    ``python`` (default: this interpreter), without needing the console script."""
    return [python, "-m", "proxy.cli", *args]


def serve_command(
    etcd_servers: Sequence[str],
    port: int,
    *,
    prefix: str = "/registry",
    bind_address: str = "127.0.0.1",
    extra_args: Sequence[str] = (),
    python: str = sys.executable,
) -> list[str]:
    """The argv that runs ``watchcache serve`` with these flags (``extra_args`` last)."""
    return cli_command(
        "serve",
        f"--etcd-servers={','.join(etcd_servers)}",
        f"--etcd-prefix={prefix}",
        f"--bind-address={bind_address}",
        f"--port={port}",
        *extra_args,
        python=python,
    )


def with_event_loop(flags: Sequence[str]) -> tuple[str, ...]:
    """``flags``, with ``--event-loop=$WATCHCACHE_EVENT_LOOP`` added when that is set
    and the flags name no loop themselves."""
    loop = os.environ.get(EVENT_LOOP_ENV, "")
    if not loop or any(f.startswith("--event-loop") for f in flags):
        return tuple(flags)
    return (*flags, f"--event-loop={loop}")


@dataclass
class APIServer:
    """One ``watchcache serve`` process, in a session of its own (a terminal's Ctrl-C
    reaches its owner, which stops it).

    ``extra_args`` are appended to the flags built from the fields
    (``--watch-cache=false``, ``--feature-gates=ConsistentListFromCache=true``, ...);
    ``argv``, when given, replaces all of them: the flags after ``serve`` verbatim (its
    ``--port`` must then be ``port``, which ``url`` uses). ``env`` is added to this
    process's environment, with ``instance_id`` (a fresh one per launcher), which the
    server echoes on every response: readiness counts only answers from this very
    process, never from another server that already listens on ``port``. The server's
    stdout and stderr go to ``log_path``; when it is None, ``start`` creates a temporary
    file (kept after ``stop``, for ``log()``).
    ``process`` is set by ``start`` and kept after ``stop`` (its exit code stays
    readable); only its own PID is ever signalled.
    """

    etcd_servers: Sequence[str]
    prefix: str = "/registry"
    port: int = field(default_factory=free_port)
    extra_args: tuple[str, ...] = ()
    log_path: Path | None = None
    argv: tuple[str, ...] | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    python: str = sys.executable
    process: subprocess.Popen[bytes] | None = None
    instance_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    # the checkout whose code runs (``python -m`` imports from there): another
    # commit's, to compare it with this one's on the same etcd
    cwd: Path = REPO

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def secure_port(self) -> int | None:
        """The HTTPS port given with ``--secure-port=N`` (N > 0), else None."""
        flags = self.argv if self.argv is not None else self.extra_args
        for flag in flags:
            if flag.startswith("--secure-port="):
                port = int(flag.split("=", 1)[1])
                return port or None
        return None

    @property
    def secure_url(self) -> str:
        if self.secure_port is None:
            raise RuntimeError("started without --secure-port=N")
        return f"https://127.0.0.1:{self.secure_port}"

    @property
    def pid(self) -> int:
        """The server's PID (after ``start``; still readable after ``stop``)."""
        if self.process is None:
            raise RuntimeError("watchcache serve was not started")
        return self.process.pid

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def command(self) -> list[str]:
        if self.argv is not None:
            return cli_command("serve", *with_event_loop(self.argv), python=self.python)
        return serve_command(
            self.etcd_servers, self.port, prefix=self.prefix,
            extra_args=with_event_loop(self.extra_args), python=self.python,
        )  # fmt: skip

    def start(self, timeout: float = 60.0, *, ready: bool = True) -> APIServer:
        """Spawn the server and wait until ``/readyz`` answers 200 (every watch cache
        primed), or with ``ready=False`` only until it listens (``/livez`` answers 200:
        for tests of a server whose etcd is down). On failure the process is stopped and
        :class:`ServerNotReady` carries its log."""
        if self.log_path is None:
            fd, name = tempfile.mkstemp(prefix="watchcache-serve-", suffix=".log")
            os.close(fd)
            self.log_path = Path(name)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        out = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child, closed below
        try:
            self.process = subprocess.Popen(
                self.command(), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, cwd=self.cwd,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env,
                     INSTANCE_ID_ENV: self.instance_id},
            )  # fmt: skip
        finally:
            out.close()
        try:
            self._wait_for("/readyz" if ready else "/livez", timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Wait until ``/readyz`` answers 200; :class:`ServerNotReady` if the process
        exits first or ``timeout`` passes."""
        self._wait_for("/readyz", timeout)

    def is_ready(self) -> bool:
        return self._answers("/readyz")

    def terminate(self) -> None:
        """Send SIGTERM (a clean shutdown) without waiting."""
        if self.running:
            assert self.process is not None
            self.process.send_signal(signal.SIGTERM)

    def wait(self, timeout: float = 15.0) -> int:
        """Wait for the process to exit; its exit code."""
        assert self.process is not None, "not started"
        return self.process.wait(timeout)

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout``; only this server's own PID. Returns
        the exit code (None if never started); stopping twice is harmless."""
        if self.process is None:
            return None
        return stop_process(self.process, timeout)

    def log(self) -> str:
        """Everything the server wrote so far (stdout and stderr)."""
        if self.log_path is None or not self.log_path.is_file():
            return ""
        return self.log_path.read_text(errors="replace")

    def __enter__(self) -> APIServer:
        """Starts the server unless it was already started (``with start(...) as s``)."""
        return self if self.process is not None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _wait_for(self, path: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                code = None if self.process is None else self.process.returncode
                if code == EXIT_PORT_IN_USE:
                    raise PortTaken(self.port, self._tail())
                raise ServerNotReady(f"watchcache serve exited with {code}; {self._tail()}")
            if self._answers(path):
                return
            time.sleep(0.05)  # process start-up: nothing to await but the port
        raise ServerNotReady(f"watchcache serve: no 200 from {path} after {timeout}s; "
                             f"{self._tail()}")  # fmt: skip

    def _answers(self, path: str) -> bool:
        try:
            with urllib.request.urlopen(self.url + path, timeout=2.0) as r:
                ours = r.headers.get(INSTANCE_HEADER) == self.instance_id
                return ours and int(r.status) == 200
        except (urllib.error.URLError, OSError, TimeoutError):
            return False

    def _tail(self) -> str:
        text = self.log()
        return f"log {self.log_path}:\n{text[-4000:]}" if text else "no log"
