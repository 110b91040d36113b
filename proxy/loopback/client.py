"""The loopback client (upstream's ``LoopbackClientConfig`` and the clientset made from it):
how the server's own bootstrap writers and controllers write to the API.

The server sends these requests to itself, over HTTP to its own listener (see
``proxy.loopback.config``), with a bearer token made at start-up that only this process
knows and that authenticates as ``system:apiserver`` in ``system:masters``
(``proxy.authentication.loopback``). So every internal write passes the same pipeline
as a user's: authentication, audit (the log shows ``system:apiserver``), flow control
(the exempt level, as system:masters), authorization, mutating admission, the kind's
strategy and validation, validating admission, managedFields.

The helpers are the few verbs internal writers need, each as upstream writes it:

- ``get``: the object, or None when it does not exist;
- ``create_if_absent``: create, AlreadyExists counting as done (another replica, or an
  earlier start, was first);
- ``update``: read, change, write back, again on a 409 Conflict (``retry.RetryOnConflict``
  with ``retry.DefaultRetry``: 5 steps of 10 ms, jitter 0.1); the change function
  returning None means "nothing to change";
- ``ensure``: create when absent, otherwise ``update`` with a reconcile function
  (upstream's ``reconciliation`` of bootstrap RBAC, APF's ensurer).

A failure is ``APIError`` carrying the Status the server answered (``transient`` for
429/5xx and a broken connection: the supervisor retries those quietly).
"""

from __future__ import annotations

import asyncio
import copy
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp
import orjson

from proxy.loopback.config import LoopbackConfig

__all__ = [
    "APIError",
    "LoopbackClient",
    "Mutate",
    "RetryBackoff",
    "is_transient",
    "resource_path",
]

JSON = dict[str, Any]
Mutate = Callable[[JSON], JSON | None]

TRANSIENT_CODES = frozenset({429, 500, 502, 503, 504})


class APIError(Exception):
    """The server answered a loopback request with a failure ``status`` (a Status)."""

    def __init__(self, status: JSON) -> None:
        self.status = status
        self.code = int(status.get("code") or 0)
        self.reason = str(status.get("reason") or "")
        super().__init__(f"{self.code} {self.reason}: {status.get('message', '')}")

    @property
    def transient(self) -> bool:
        return self.code in TRANSIENT_CODES or self.code == 0


def is_transient(err: BaseException) -> bool:
    """An expected failure of an internal write (etcd down, the server busy or going
    away), logged without a traceback."""
    return isinstance(err, APIError) and err.transient


def _transport_error(err: Exception) -> APIError:
    message = f"loopback request failed: {err or type(err).__name__}"
    return APIError({"kind": "Status", "status": "Failure", "message": message, "code": 0})


def resource_path(
    group: str, version: str, plural: str, namespace: str = "", name: str = "", sub: str = ""
) -> str:
    """The REST path of a collection (no name) or an object (``sub``: a subresource)."""
    parts = ["/api", version] if not group else ["/apis", group, version]
    if namespace:
        parts += ["namespaces", quote(namespace, safe="")]
    parts.append(plural)
    if name:
        parts.append(quote(name, safe=""))
    if sub:
        parts.append(sub)
    return "/".join(parts)


@dataclass(frozen=True)
class RetryBackoff:
    """``retry.DefaultRetry``: how ``update`` waits between conflicting attempts."""

    steps: int = 5
    duration: float = 0.010
    jitter: float = 0.1

    def delay(self) -> float:
        return self.duration * (1 + random.random() * self.jitter)


class LoopbackClient:
    """JSON requests to this server as ``system:apiserver`` (see the module docstring).
    One connection pool, opened on first use and closed by ``close``."""

    def __init__(self, config: LoopbackConfig, retry: RetryBackoff = RetryBackoff()) -> None:
        self.config = config
        self.retry = retry
        self._session: aiohttp.ClientSession | None = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                base_url=self.config.base_url,
                headers={
                    "Authorization": f"Bearer {self.config.token}",
                    "User-Agent": self.config.user_agent,
                    "Accept": "application/json",
                },
                connector=aiohttp.TCPConnector(ssl=self.config.ssl),
                timeout=aiohttp.ClientTimeout(total=self.config.timeout),
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def request(
        self, method: str, path: str, body: JSON | None = None,
        content_type: str = "application/json",
    ) -> JSON:  # fmt: skip
        """One request; the decoded answer, or APIError with the Status."""
        data = orjson.dumps(body) if body is not None else None
        headers = {"Content-Type": content_type} if data is not None else {}
        try:
            async with self._http().request(method, path, data=data, headers=headers) as resp:
                raw = await resp.read()
                status = resp.status
        except (aiohttp.ClientError, OSError, TimeoutError) as e:
            raise _transport_error(e) from e
        try:
            answer = orjson.loads(raw) if raw else {}
        except orjson.JSONDecodeError:
            answer = {"message": raw[:200].decode(errors="replace")}
        if status >= 400:
            raise APIError({"code": status, **answer} if "code" not in answer else answer)
        return answer if isinstance(answer, dict) else {}

    async def get(self, path: str) -> JSON | None:
        try:
            return await self.request("GET", path)
        except APIError as e:
            if e.code == 404:
                return None
            raise

    async def create(self, collection: str, obj: JSON) -> JSON:
        return await self.request("POST", collection, obj)

    async def create_if_absent(self, collection: str, obj: JSON) -> JSON | None:
        """The created object, or None when one of that name exists already."""
        try:
            return await self.create(collection, obj)
        except APIError as e:
            if e.code == 409 and e.reason == "AlreadyExists":
                return None
            raise

    async def delete(self, path: str) -> bool:
        """True when deleted, False when it did not exist."""
        try:
            await self.request("DELETE", path)
        except APIError as e:
            if e.code == 404:
                return False
            raise
        return True

    async def update(
        self, path: str, mutate: Mutate, *, write_path: str | None = None
    ) -> JSON | None:
        """Read ``path``, apply ``mutate`` to a copy and PUT it back (to ``write_path``
        if given: a subresource that cannot be read, such as a namespace's
        ``/finalize``), again on a Conflict (``RetryOnConflict``). The written object;
        the current one when ``mutate`` returns None (nothing to change); None when the
        object does not exist."""
        for attempt in range(self.retry.steps):
            current = await self.get(path)
            if current is None:
                return None
            wanted = mutate(copy.deepcopy(current))
            if wanted is None:
                return current
            try:
                return await self.request("PUT", write_path or path, wanted)
            except APIError as e:
                if e.code != 409 or e.reason != "Conflict" or attempt + 1 == self.retry.steps:
                    raise
            await asyncio.sleep(self.retry.delay())
        raise AssertionError("unreachable")  # the last attempt returned or raised

    async def apply(self, path: str, obj: JSON, field_manager: str, *, force: bool) -> JSON:
        """A server-side apply of ``obj`` at ``path`` (JSON is YAML: the apply patch type
        takes it as it is), as client-go's ``Apply``/``ApplyStatus``."""
        query = f"fieldManager={quote(field_manager, safe='')}" + ("&force=true" if force else "")
        sep = "&" if "?" in path else "?"
        return await self.request("PATCH", f"{path}{sep}{query}", obj,
                                  content_type="application/apply-patch+yaml")  # fmt: skip

    async def ensure(self, collection: str, obj: JSON, reconcile: Mutate) -> JSON:
        """``obj`` created when absent; otherwise the stored one updated by ``reconcile``
        (None: left as it is). A create that loses a race reconciles the winner's."""
        path = f"{collection}/{quote(obj['metadata']['name'], safe='')}"
        while True:
            updated = await self.update(path, reconcile)
            if updated is not None:
                return updated
            created = await self.create_if_absent(collection, obj)
            if created is not None:
                return created
