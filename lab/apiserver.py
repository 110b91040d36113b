"""``watchcache serve`` as a subprocess: start on a free port, wait until ready, stop by PID.

The lab, the demos and the benchmark talk to the server only through its command line
and HTTP, as a user would, so they exercise exactly what ships. Synchronous, like
:mod:`lab.etcd`; async callers wrap ``start``/``stop`` in ``asyncio.to_thread``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from lab.etcd import free_port

__all__ = ["APIServer", "ServerNotReady", "serve_command"]


class ServerNotReady(RuntimeError):
    """The server exited or did not answer /readyz with 200 in time."""


def serve_command(
    etcd_servers: list[str],
    port: int,
    *,
    prefix: str = "/registry",
    bind_address: str = "127.0.0.1",
    extra_args: tuple[str, ...] = (),
) -> list[str]:
    """The argv that runs ``watchcache serve`` with this interpreter."""
    return [
        sys.executable, "-m", "proxy.cli", "serve",
        f"--etcd-servers={','.join(etcd_servers)}",
        f"--etcd-prefix={prefix}",
        f"--bind-address={bind_address}",
        f"--port={port}",
        *extra_args,
    ]  # fmt: skip


@dataclass
class APIServer:
    """One ``watchcache serve`` process.

    ``extra_args`` are passed through (``--watch-cache=false``,
    ``--feature-gates=ConsistentListFromCache=true``, ...). The server's output goes to
    ``log_path`` (default: a file next to the lab's other state, or /dev/null).
    """

    etcd_servers: list[str]
    prefix: str = "/registry"
    port: int = field(default_factory=free_port)
    extra_args: tuple[str, ...] = ()
    log_path: Path | None = None
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def command(self) -> list[str]:
        return serve_command(
            self.etcd_servers, self.port, prefix=self.prefix, extra_args=self.extra_args
        )

    def start(self, timeout: float = 60.0) -> APIServer:
        """Spawn the server and wait for ``/readyz`` = 200 (the cache primed)."""
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            out = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child
        else:
            out = open(os.devnull, "wb")  # noqa: SIM115
        try:
            self.process = subprocess.Popen(
                self.command(), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, cwd=Path(__file__).resolve().parent.parent,
            )  # fmt: skip
        finally:
            out.close()
        try:
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                code = None if self.process is None else self.process.returncode
                raise ServerNotReady(f"watchcache serve exited with {code}; {self._tail()}")
            if self.is_ready():
                return
            time.sleep(0.05)
        raise ServerNotReady(f"watchcache serve not ready after {timeout}s; {self._tail()}")

    def is_ready(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/readyz", timeout=2.0) as r:
                return int(r.status) == 200
        except (urllib.error.URLError, OSError, TimeoutError):
            return False

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout``; only this server's own PID."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def __enter__(self) -> APIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _tail(self) -> str:
        if self.log_path is None or not self.log_path.exists():
            return "no log"
        return "log: " + self.log_path.read_text(errors="replace")[-2000:]
