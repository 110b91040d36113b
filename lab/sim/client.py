"""One controller's connection to the API server: kubernetes-asyncio's generated client,
used with JSON in and JSON out.

Every simulated controller is an ordinary API client with its own user agent (it shows
under that name in the server's access log and metrics). It calls the generated API
methods with ``_preload_content=False`` and reads the raw answer itself: the objects stay
plain JSON (as they travel), a non-2xx answer becomes :class:`APIError` carrying the
server's ``Status``, and a watch is read line by line by :mod:`lab.sim.informer`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import orjson
from kubernetes_asyncio import client as k8s

__all__ = ["JSON", "APIError", "Client"]

JSON = dict[str, Any]
REQUEST_TIMEOUT = 30.0
USER_AGENT_PREFIX = "watchcache-sim"


class APIError(Exception):
    """A non-2xx answer; ``status`` is the HTTP code, ``body`` the Status (or {})."""

    def __init__(self, status: int, body: JSON) -> None:
        super().__init__(f"{status} {body.get('reason', '')}: {body.get('message', '')}")
        self.status = status
        self.body = body

    @property
    def reason(self) -> str:
        return str(self.body.get("reason", ""))


class Client:
    """kubernetes-asyncio's ApiClient for ``server`` as ``watchcache-sim-<name>/0.1``
    (then `` (<detail>)``, e.g. the node a kubelet runs).

    ``core``, ``apps``, ``batch``, ``coordination``, ``policy``, ``certificates`` and
    ``discovery`` are the generated API groups; ``call`` runs one of their methods and
    returns the decoded JSON answer.
    """

    def __init__(self, server: str, name: str, detail: str = "") -> None:
        config = k8s.Configuration(host=server)
        self.api = k8s.ApiClient(config)
        self.user_agent = f"{USER_AGENT_PREFIX}-{name}/0.1" + (f" ({detail})" if detail else "")
        self.api.user_agent = self.user_agent
        self.core = k8s.CoreV1Api(self.api)
        self.apps = k8s.AppsV1Api(self.api)
        self.batch = k8s.BatchV1Api(self.api)
        self.coordination = k8s.CoordinationV1Api(self.api)
        self.policy = k8s.PolicyV1Api(self.api)
        self.certificates = k8s.CertificatesV1Api(self.api)
        self.discovery = k8s.DiscoveryV1Api(self.api)

    async def call(self, method: Callable[..., Awaitable[Any]], *args: Any, **kw: Any) -> JSON:
        """``method(*args, **kw)`` of a generated API; its JSON answer, or APIError."""
        kw.setdefault("_request_timeout", REQUEST_TIMEOUT)
        resp: aiohttp.ClientResponse = await method(*args, _preload_content=False, **kw)
        async with resp:
            raw = await resp.read()
            status = resp.status
        try:
            body = orjson.loads(raw) if raw else {}
        except orjson.JSONDecodeError:
            body = {"message": raw[:200].decode(errors="replace")}
        if not isinstance(body, dict):
            body = {"message": str(body)[:200]}
        if status >= 300:
            raise APIError(status, body)
        return body

    async def raw(self, method: str, path: str, body: JSON | None = None) -> JSON:
        """``method path`` through the same client, for what the generated API has no
        method for (discovery, any resource by its path)."""
        headers = {"Accept": "application/json", "Content-Type": "application/json"}

        async def request(**kw: Any) -> Any:
            return await self.api.call_api(path, method, header_params=headers, body=body,
                                           auth_settings=[], **kw)  # fmt: skip

        return await self.call(request)

    async def stream(
        self, method: Callable[..., Awaitable[Any]], *args: Any, read_timeout: float, **kw: Any
    ) -> aiohttp.ClientResponse:
        """Open a streaming request (a watch); the caller reads and closes the response.
        APIError when the server refuses it."""
        resp: aiohttp.ClientResponse = await method(
            *args, _preload_content=False, _request_timeout=(10, read_timeout), **kw
        )
        if resp.status >= 300:
            async with resp:
                raw = await resp.read()
            try:
                body = orjson.loads(raw)
            except orjson.JSONDecodeError:
                body = {}
            raise APIError(resp.status, body if isinstance(body, dict) else {})
        return resp

    async def close(self) -> None:
        await self.api.close()
