"""What a demo sees over HTTP, and the transcript it prints.

An :class:`Observation` is one request and the parts of its answer the lab talks about:
status, latency, bytes, where the server says it served it from, objects fetched and
returned, items, the list's resourceVersion and continue token. A :class:`Transcript`
prints requests and checks as they happen and remembers whether every claim held.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson
from rich.console import Console

__all__ = ["Observation", "Transcript", "WatchStream", "request", "watch"]

SERVED_FROM = "X-Watchcache-Served-From"
FETCHED = "X-Watchcache-Objects-Fetched"
RETURNED = "X-Watchcache-Objects-Returned"


def _int(v: str | None) -> int | None:
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


@dataclass
class Observation:
    method: str
    path: str
    status: int
    seconds: float
    nbytes: int
    served_from: str | None
    fetched: int | None
    returned: int | None
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def items(self) -> list[Any]:
        if isinstance(self.body, dict):
            return list(self.body.get("items") or [])
        return []

    @property
    def metadata(self) -> dict[str, Any]:
        if isinstance(self.body, dict):
            return dict(self.body.get("metadata") or {})
        return {}

    @property
    def resource_version(self) -> int | None:
        return _int(self.metadata.get("resourceVersion"))

    @property
    def continue_token(self) -> str:
        return str(self.metadata.get("continue") or "")

    @property
    def message(self) -> str:
        return str(self.body.get("message", "")) if isinstance(self.body, dict) else ""

    def line(self) -> str:
        """``GET /api/v1/pods?limit=10 -> 200 (12 ms, 34.1 KB) served-from=etcd ...``"""
        parts = [f"{self.method} {self.path} -> {self.status}",
                 f"({self.seconds * 1000:.0f} ms, {self.nbytes / 1024:.1f} KB)"]  # fmt: skip
        if self.served_from:
            parts.append(f"served-from={self.served_from}")
        if self.fetched is not None:
            parts.append(f"fetched={self.fetched}")
        if self.returned is not None:
            parts.append(f"returned={self.returned}")
        if isinstance(self.body, dict) and "items" in self.body:
            parts.append(f"items={len(self.items)}")
            if self.continue_token:
                parts.append("continue=<token>")
            rem = self.metadata.get("remainingItemCount")
            if rem is not None:
                parts.append(f"remainingItemCount={rem}")
        elif self.status >= 400 and self.message:
            parts.append(f"message={self.message!r}")
        return " ".join(parts)


async def request(
    session: aiohttp.ClientSession,
    base: str,
    path: str,
    *,
    method: str = "GET",
    body: Any = None,
    within: float = 30.0,
) -> Observation:
    """One HTTP request; the body is parsed as JSON when it is JSON. A timeout of the
    whole request is reported as status 0 (no answer), not raised."""
    data = orjson.dumps(body) if body is not None else None
    hdrs = {"Content-Type": "application/json"} if data is not None else {}
    if method == "PATCH":
        hdrs["Content-Type"] = "application/merge-patch+json"
    t0 = time.perf_counter()
    try:
        async with asyncio.timeout(within):
            async with session.request(method, base + path, data=data, headers=hdrs) as r:
                raw = await r.read()
                status, headers = r.status, dict(r.headers)
    except TimeoutError:
        return Observation(method, path, 0, time.perf_counter() - t0, 0, None, None, None)
    seconds = time.perf_counter() - t0
    try:
        parsed: Any = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        parsed = raw[:200].decode(errors="replace")
    return Observation(
        method, path, status, seconds, len(raw), headers.get(SERVED_FROM),
        _int(headers.get(FETCHED)), _int(headers.get(RETURNED)), parsed, headers,
    )  # fmt: skip


class WatchStream:
    """The events of one watch response, one JSON object per line."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response
        self.status = response.status

    async def next(self, within: float) -> dict[str, Any] | None:
        """The next event, or None when the stream ended; TimeoutError if none came."""
        async with asyncio.timeout(within):
            line = await self.response.content.readline()
        if not line:
            return None
        event: dict[str, Any] = orjson.loads(line)
        return event


@asynccontextmanager
async def watch(
    session: aiohttp.ClientSession, base: str, path: str
) -> AsyncIterator[WatchStream]:
    """Open a watch (``path`` must carry ``watch=1``); closed on exit."""
    timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
    async with session.get(base + path, timeout=timeout) as r:
        yield WatchStream(r)


def event_line(event: dict[str, Any]) -> str:
    obj = event.get("object") or {}
    meta = obj.get("metadata") or {}
    what = meta.get("name") or obj.get("message") or ""
    ns = meta.get("namespace")
    where = f"{ns}/{what}" if ns else what
    rv = meta.get("resourceVersion")
    return f"  event {event.get('type'):<8} {obj.get('kind', '')} {where} rv={rv}"


class Transcript:
    """Prints a demo as it runs; ``ok`` is False once any check failed."""

    def __init__(self, name: str, console: Console | None = None) -> None:
        self.name = name
        self.console = console or Console(highlight=False, soft_wrap=True)
        self.failures: list[str] = []

    @property
    def ok(self) -> bool:
        return not self.failures

    def title(self, text: str) -> None:
        """A rule with the demo's name, then ``text`` in full on its own line (a rule
        cuts a title longer than the terminal with an ellipsis)."""
        self.console.rule(f"[bold]{self.name}[/bold]")
        self.console.print(f"[bold]{text}[/bold]")

    def say(self, text: str) -> None:
        self.console.print(text, markup=False)

    def obs(self, o: Observation) -> Observation:
        self.console.print(f"  {o.line()}", markup=False)
        return o

    def check(self, claim: str, held: bool, detail: str = "") -> bool:
        mark = "[green]ok  [/green]" if held else "[red]FAIL[/red]"
        self.console.print(f"  {mark} {claim}" + (f"  ({detail})" if detail else ""))
        if not held:
            self.failures.append(claim)
        return held

    def explain(self, text: str) -> None:
        self.console.print(f"[bold]=>[/bold] {text}")
