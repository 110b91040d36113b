"""Endpoints: one gRPC channel per etcd member, and the choice of which one to use.

The pool keeps a *current* endpoint. Calls go to it while its channel is READY; when it
fails (``failed()``) or is not READY, the pool moves to another endpoint whose channel is
READY, or kicks every channel to connect and takes the first that becomes READY before
the caller's deadline. Channels reconnect by themselves with a short capped backoff, so
a restarted member is usable again within about a second.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import grpc

from etcdclient._pb import rpc_pb2_grpc as _generated_stubs
from etcdclient._unary import DirectUnary, UnaryCall, unary
from etcdclient.errors import ConfigError, Unavailable

# The generated gRPC stubs are untyped; calls through them are typed at the call sites.
_stubs: Any = _generated_stubs

__all__ = ["CHANNEL_OPTIONS", "Endpoint", "EndpointPool", "TLSFiles", "parse_endpoint"]

CHANNEL_OPTIONS: list[tuple[str, Any]] = [
    # Large ranges (10k objects of a few KB) exceed gRPC's 4 MiB default.
    ("grpc.max_receive_message_length", -1),
    ("grpc.max_send_message_length", (3 << 20) + (512 << 10)),  # a 3 MiB body + etcd overhead
    # Notice a dead peer on an idle watch stream; etcd's server enforces >= 5 s between pings.
    ("grpc.keepalive_time_ms", 10_000),
    ("grpc.keepalive_timeout_ms", 5_000),
    ("grpc.http2.max_pings_without_data", 0),
    # gRPC's default reconnect backoff grows to 120 s: far too slow after a member restart.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1_000),
    # Retries are ours (see EtcdClient): gRPC must not replay a non-idempotent Put.
    ("grpc.enable_retries", 0),
]


@dataclass(frozen=True)
class TLSFiles:
    """PEM contents read from the files given to the client (None: not given)."""

    ca: bytes | None = None
    cert: bytes | None = None
    key: bytes | None = None

    @classmethod
    def read(cls, ca_file: str | None, cert_file: str | None, key_file: str | None) -> TLSFiles:
        if (cert_file is None) != (key_file is None):
            raise ConfigError("cert_file and key_file must be given together")

        def load(path: str | None, what: str) -> bytes | None:
            if path is None:
                return None
            try:
                with open(path, "rb") as f:
                    return f.read()
            except OSError as e:
                raise ConfigError(f"cannot read {what} {path!r}: {e.strerror}") from None

        return cls(
            load(ca_file, "ca_file"), load(cert_file, "cert_file"), load(key_file, "key_file")
        )

    @property
    def given(self) -> bool:
        return self.ca is not None or self.cert is not None

    def credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(
            root_certificates=self.ca, private_key=self.key, certificate_chain=self.cert
        )


def parse_endpoint(url: str, *, tls_default: bool) -> tuple[str, bool]:
    """``(grpc target "host:port", secure)`` for ``http://h:p``, ``https://h:p`` or ``h:p``.

    A bare ``h:p`` is secure when TLS files were given."""
    if "://" not in url:
        url = ("https://" if tls_default else "http://") + url
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"bad etcd endpoint {url!r}: want http(s)://host:port")
    try:
        port = parts.port or 2379
    except ValueError:
        raise ConfigError(f"bad etcd endpoint {url!r}: invalid port") from None
    host = parts.hostname
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{port}", parts.scheme == "https"


@dataclass
class Endpoint:
    """One member: its URL, channel and the generated stubs bound to that channel."""

    url: str
    target: str
    secure: bool
    channel: grpc.aio.Channel | None = None
    kv: Any = None
    watch: Any = None
    lease: Any = None
    cluster: Any = None
    maintenance: Any = None
    last_error: str = field(default="")
    # (service, method) -> its unary call on this channel (etcdclient._unary)
    _unary: dict[tuple[str, str], UnaryCall] = field(default_factory=dict, repr=False)

    def unary(self, service: str, method: str) -> UnaryCall:
        """The unary ``method`` of the stub ``service`` ("kv", "Range") on this
        endpoint's channel, as ``await call(request, seconds)`` (gRPC's deadline)."""
        found = self._unary.get((service, method))
        if found is None:
            found = self._unary[service, method] = unary(getattr(getattr(self, service), method))
        return found

    def open(self, tls: TLSFiles) -> None:
        if self.channel is not None:
            return
        self._unary.clear()
        if self.secure:
            self.channel = grpc.aio.secure_channel(
                self.target, tls.credentials(), options=CHANNEL_OPTIONS
            )
        else:
            self.channel = grpc.aio.insecure_channel(self.target, options=CHANNEL_OPTIONS)
        self.kv = _stubs.KVStub(self.channel)
        self.watch = _stubs.WatchStub(self.channel)
        self.lease = _stubs.LeaseStub(self.channel)
        self.cluster = _stubs.ClusterStub(self.channel)
        self.maintenance = _stubs.MaintenanceStub(self.channel)

    def ready(self) -> bool:
        return (
            self.channel is not None and self.channel.get_state() == grpc.ChannelConnectivity.READY
        )

    async def close(self) -> None:
        if self.channel is not None:
            channel, self.channel = self.channel, None
            for call in self._unary.values():
                if isinstance(call, DirectUnary):
                    call.cancel_all()
            self._unary.clear()
            await channel.close()


class EndpointPool:
    """The client's endpoints. Shared by unary calls, the watch stream and keep-alives;
    ``current`` is changed only by ``ready()`` and ``failed()``."""

    def __init__(self, urls: list[str], tls: TLSFiles) -> None:
        if not urls:
            raise ConfigError("at least one etcd endpoint is required")
        self._tls = tls
        self.endpoints = [Endpoint(u, *parse_endpoint(u, tls_default=tls.given)) for u in urls]
        self._current = 0

    def open(self) -> None:
        """Create the channels (needs a running event loop; idempotent)."""
        for ep in self.endpoints:
            ep.open(self._tls)

    def by_url(self, url: str) -> Endpoint:
        for ep in self.endpoints:
            if ep.url == url:
                return ep
        raise ConfigError(f"{url!r} is not one of this client's endpoints")

    def in_order(self) -> list[Endpoint]:
        """Every endpoint, the current one first."""
        n = len(self.endpoints)
        return [self.endpoints[(self._current + i) % n] for i in range(n)]

    def prefer(self, ep: Endpoint) -> None:
        self._current = self.endpoints.index(ep)

    def failed(self, ep: Endpoint, error: str = "") -> None:
        """``ep`` just failed: the next call starts from another endpoint."""
        if error:
            ep.last_error = error
        if self.endpoints[self._current] is ep:
            self._current = (self._current + 1) % len(self.endpoints)

    def current_if_ready(self) -> Endpoint | None:
        """The current endpoint if its channel is READY: every call's first question,
        answered without the coroutine, the ordered list and the search of ``ready``."""
        ep = self.endpoints[self._current]
        return ep if ep.ready() else None

    async def ready(self, deadline: float) -> Endpoint:
        """An endpoint whose channel is READY: the current one if it is, else another;
        else the first to become READY before ``deadline`` (loop time), else Unavailable."""
        self.open()
        for ep in self.in_order():
            if ep.ready():
                self.prefer(ep)
                return ep
        loop = asyncio.get_running_loop()
        waits = {asyncio.ensure_future(self._until_ready(ep)): ep for ep in self.in_order()}
        try:
            done, _ = await asyncio.wait(
                waits, timeout=max(deadline - loop.time(), 0),
                return_when=asyncio.FIRST_COMPLETED,
            )  # fmt: skip
        finally:
            for task in waits:
                task.cancel()
            for task in waits:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if not done:
            details = "; ".join(
                f"{ep.url}: {ep.last_error or 'not ready'}" for ep in waits.values()
            )
            raise Unavailable(f"no etcd endpoint is reachable ({details})")
        ep = next(waits[t] for t in waits if t in done)
        self.prefer(ep)
        return ep

    @staticmethod
    async def _until_ready(ep: Endpoint) -> None:
        assert ep.channel is not None
        await ep.channel.channel_ready()

    async def close(self) -> None:
        for ep in self.endpoints:
            await ep.close()
