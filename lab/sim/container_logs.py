"""What a simulated container writes to its log: pure functions of the container's
status, computed when read (nothing runs in the background, so 5,000 containers cost
nothing until someone reads one).

An *instance* is one run of a container: from ``state.running.startedAt`` (the current
one) or ``lastState.terminated`` (the previous one, ``kubectl logs --previous``). It
writes its image's start-up lines, then one line every few seconds (the image's steady
traffic: an access log, a cache's saves, an app's requests), and a previous instance
that failed ends with the line that explains its exit. Lines are reproducible: the same
instance always wrote the same lines at the same times, so ``--since``, ``--tail`` and
``-f`` agree with each other.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["Instance", "format_line", "instance_lines", "parse_time"]

KEEP_LINES = 2000  # the kubelet rotates container logs; older lines are gone
_STARTUP_STEP = 0.05  # seconds between start-up lines


def parse_time(value: str) -> float:
    """An RFC 3339 timestamp (``startedAt``, ``sinceTime``) as epoch seconds."""
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def _stamp(t: float, fmt: str) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime(fmt)


def format_line(t: float, text: str, timestamps: bool) -> str:
    """A log line as the kubelet serves it (``--timestamps``: RFC 3339 with nanoseconds)."""
    if not timestamps:
        return text + "\n"
    micro = _stamp(t, "%Y-%m-%dT%H:%M:%S.%f")
    return f"{micro}{int(t * 1e9) % 1000:03d}Z {text}\n"


@dataclass(frozen=True)
class Instance:
    """One run of container ``name`` (``image``) of pod ``pod``: from ``started`` to
    ``finished`` (None: still running) with ``exit_code``; ``key`` tells its lines
    apart from another run's."""

    pod: str
    name: str
    image: str
    key: str
    started: float
    finished: float | None = None
    exit_code: int | None = None
    # its own command (``kubectl run ... -- sh``) or a shell on stdin: nothing we could
    # guess it prints, so its log has only what it ended with
    quiet: bool = False

    @property
    def period(self) -> float:
        """Seconds between two steady lines (2 to 9, per instance)."""
        return 2.0 + _unit(self.key, "period") * 7.0


def _unit(*parts: object) -> float:
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**32


def _flavour(image: str) -> str:
    base = image.rsplit("/", 1)[-1].split(":")[0].split("@")[0]
    for name in ("nginx", "redis", "postgres"):
        if name in base:
            return name
    return "app"


def _startup(inst: Instance, t: float) -> list[str]:
    when = _stamp(t, "%Y/%m/%d %H:%M:%S")
    flavour = _flavour(inst.image)
    if flavour == "nginx":
        return ["/docker-entrypoint.sh: /docker-entrypoint.d/ is not empty, will attempt to "
                "perform configuration",
                "/docker-entrypoint.sh: Configuration complete; ready for start up",
                f"{when} [notice] 1#1: using the \"epoll\" event method",
                f"{when} [notice] 1#1: start worker processes"]  # fmt: skip
    if flavour == "redis":
        when = _stamp(t, "%d %b %Y %H:%M:%S.000")
        return [f"1:C {when} * oO0OoO0OoO0Oo Redis is starting oO0OoO0OoO0Oo",
                f"1:M {when} * Server initialized",
                f"1:M {when} * Ready to accept connections tcp"]  # fmt: skip
    if flavour == "postgres":
        when = _stamp(t, "%Y-%m-%d %H:%M:%S.000 UTC")
        return [f"{when} [1] LOG:  starting PostgreSQL 16.4 on x86_64-pc-linux-gnu",
                f"{when} [1] LOG:  listening on IPv4 address \"0.0.0.0\", port 5432",
                f"{when} [1] LOG:  database system is ready to accept connections"]  # fmt: skip
    when = _stamp(t, "%Y-%m-%dT%H:%M:%SZ")
    return [f'time="{when}" level=info msg="starting {inst.name}" image="{inst.image}"',
            f'time="{when}" level=info msg="loaded configuration" source=/etc/config',
            f'time="{when}" level=info msg="listening" address=":8080"']  # fmt: skip


def _steady(inst: Instance, k: int, t: float) -> str:
    flavour = _flavour(inst.image)
    client = f"10.244.{int(_unit(inst.key, k, 'a') * 50)}.{2 + int(_unit(inst.key, k) * 200)}"
    if flavour == "nginx":
        when = _stamp(t, "%d/%b/%Y:%H:%M:%S +0000")
        path = ("/", "/healthz", "/index.html", "/api/items")[k % 4]
        size = 600 + k % 97
        return f'{client} - - [{when}] "GET {path} HTTP/1.1" 200 {size} "-" "kube-probe/1.37"'
    if flavour == "redis":
        when = _stamp(t, "%d %b %Y %H:%M:%S.000")
        return (f"1:M {when} * {1 + k % 9} changes in 60 seconds. Saving..." if k % 2 == 0
                else f"1:M {when} * DB saved on disk")  # fmt: skip
    if flavour == "postgres":
        when = _stamp(t, "%Y-%m-%d %H:%M:%S.000 UTC")
        return f"{when} [{60 + k % 40}] LOG:  checkpoint complete: wrote {k % 50} buffers"
    when = _stamp(t, "%Y-%m-%dT%H:%M:%SZ")
    path = ("/healthz", "/api/v1/items", "/metrics", "/api/v1/orders")[k % 4]
    ms = 0.4 + _unit(inst.key, k, "ms") * 40
    return (f'time="{when}" level=info msg="handled request" method=GET path={path} '
            f"status=200 remote={client} duration={ms:.1f}ms")  # fmt: skip


def _last_words(inst: Instance) -> str | None:
    if inst.exit_code in (None, 0, 137):  # 137: killed, it wrote nothing more
        return None
    return (f'level=fatal msg="lost connection to upstream, exiting" '
            f"container={inst.name} exitCode={inst.exit_code}")  # fmt: skip


def instance_lines(
    inst: Instance, until: float, after: float | None = None
) -> Iterator[tuple[float, str]]:
    """(time, text) of every line ``inst`` wrote up to ``until`` (and after ``after``:
    what a follower has not seen yet; the last ``KEEP_LINES`` steady ones), in order."""
    end = until if inst.finished is None else min(until, inst.finished)
    low = float("-inf") if after is None else after
    if inst.quiet:
        end = float("-inf")  # neither start-up nor steady lines
    for i, text in enumerate(_startup(inst, inst.started)):
        t = inst.started + i * _STARTUP_STEP
        if low < t <= end:
            yield t, text
    first = inst.started + 1.0
    count = int((end - first) // inst.period) + 1 if end >= first else 0
    start = max(count - KEEP_LINES, 0)
    if after is not None and after >= first:
        start = max(start, int((after - first) // inst.period) + 1)
    for k in range(start, count):
        t = first + k * inst.period
        if t > low:
            yield t, _steady(inst, k, t)
    words = _last_words(inst)
    if words is not None and inst.finished is not None and low < inst.finished <= until:
        yield inst.finished, words
