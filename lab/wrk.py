"""A native load generator for the bench: Debian's ``wrk``, run as a subprocess.

A Python client spends about as much CPU per small request as the server it measures,
which flattens every latency ratio toward 1 and caps the throughput it can ask for;
``wrk`` (C, one thread per core, HTTP/1.1 keep-alive, TLS without verification) costs a
few microseconds per request. It is found, in order: the path given, ``wrk`` on
``PATH``, or the copy unpacked under ``$WATCHCACHE_CACHE_DIR/wrk`` (``.cache/wrk``),
which is fetched on first use from the machine's own Debian suite with its LuaJIT
library (downloaded and unpacked, never installed: :mod:`storage.protobuf.debian`).

Each run's figures come from a Lua ``done`` hook that prints one JSON line (requests,
errors, latency percentiles from wrk's histogram), and its own CPU time from
``wait4``, so the report can say what the load generator itself cost.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lab.apiserver import REPO
from storage.protobuf.debian import DebianUnavailable, download_and_unpack

__all__ = ["Wrk", "WrkResult", "WrkUnavailable", "find_wrk"]

PACKAGES = ("wrk", "libluajit-5.1-2")
MARK = "WRKJSON "
# wrk's done() hook: one JSON line, latencies in microseconds
DONE_LUA = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '%s{"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,' ..
    '"status":%d,"timeout":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d}\\n',
    "MARK", summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write,
    e.status, e.timeout, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max))
end
""".replace("MARK", MARK)


class WrkUnavailable(RuntimeError):
    """wrk is neither given, on PATH, nor fetchable (with the reason)."""


@dataclass(frozen=True)
class WrkResult:
    requests: int
    seconds: float
    errors: int  # connect, read, write, timeout and HTTP status >= 400
    p50: float  # seconds
    p90: float
    p99: float
    max: float
    client_cpu: float  # wrk's own CPU seconds (user + system)

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


@dataclass(frozen=True)
class Wrk:
    """A runnable wrk: its binary and the library path its LuaJIT needs."""

    binary: Path
    library_path: str = ""

    def version(self) -> str:
        done = subprocess.run([str(self.binary), "--version"], capture_output=True,
                              text=True, env=self._env())  # fmt: skip
        return (done.stdout or done.stderr).splitlines()[0].strip()

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.library_path:
            env["LD_LIBRARY_PATH"] = ":".join(
                p for p in (self.library_path, env.get("LD_LIBRARY_PATH", "")) if p)
        return env

    def run(self, url: str, *, connections: int, seconds: float, threads: int = 1,
            headers: Mapping[str, str] | None = None) -> WrkResult:  # fmt: skip
        """``connections`` keep-alive connections GETting ``url`` back to back for
        ``seconds``."""
        with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
            script.write(DONE_LUA)
        argv = [str(self.binary), f"-t{min(threads, connections)}", f"-c{connections}",
                f"-d{max(1, round(seconds))}s", "--timeout=10s", "-s", script.name]  # fmt: skip
        for name, value in (headers or {}).items():
            argv += ["-H", f"{name}: {value}"]
        try:
            # wrk's CPU: what reaping it adds to this process's children's usage (the
            # bench reaps no other child meanwhile: its servers live until the end)
            before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
            done = subprocess.run([*argv, url], capture_output=True, text=True,
                                  env=self._env())  # fmt: skip
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
        finally:
            os.unlink(script.name)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        out, err = done.stdout, done.stderr
        line = next((x for x in out.splitlines() if x.startswith(MARK)), None)
        if done.returncode != 0 or line is None:
            took = time.perf_counter() - t0
            raise RuntimeError(f"wrk failed ({done.returncode}) after {took:.1f} s: "
                               f"{err.strip() or out}")  # fmt: skip
        d = json.loads(line[len(MARK):])
        errors = sum(d[k] for k in ("connect", "read", "write", "status", "timeout"))
        return WrkResult(d["requests"], d["duration_us"] / 1e6, errors, d["p50_us"] / 1e6,
                         d["p90_us"] / 1e6, d["p99_us"] / 1e6, d["max_us"] / 1e6,
                         cpu)  # fmt: skip


def cache_dir() -> Path:
    explicit = os.environ.get("WATCHCACHE_CACHE_DIR")
    return (Path(explicit) if explicit else REPO / ".cache") / "wrk"


def _suite() -> str:
    """This machine's Debian suite (its wrk links against this machine's OpenSSL)."""
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("VERSION_CODENAME="):
                return line.split("=", 1)[1].strip('"') or "bookworm"
    except OSError:
        pass
    return "bookworm"


def find_wrk(explicit: str | None = None) -> Wrk:
    """The wrk to run (see the module docstring); WrkUnavailable says why there is none."""
    if explicit:
        if not Path(explicit).is_file():
            raise WrkUnavailable(f"{explicit} is not a file")
        return Wrk(Path(explicit))
    on_path = shutil.which("wrk")
    if on_path:
        return Wrk(Path(on_path))
    root = cache_dir()
    binary, libs = root / "usr" / "bin" / "wrk", root / "usr" / "lib" / "x86_64-linux-gnu"
    if not binary.exists():
        tmp = Path(tempfile.mkdtemp(prefix="wrk-", dir=root.parent if root.parent.exists()
                                    else None))  # fmt: skip
        try:
            download_and_unpack(_suite(), PACKAGES, tmp)
        except DebianUnavailable as err:
            shutil.rmtree(tmp, ignore_errors=True)
            raise WrkUnavailable(f"wrk is not on PATH and could not be fetched from "
                                 f"Debian ({err}); give one with --wrk PATH") from err
        if not binary.exists():  # another process may have unpacked it meanwhile
            shutil.rmtree(root, ignore_errors=True)
            tmp.rename(root)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return Wrk(binary, str(libs))
