"""The aggregator's client side: TLS to the extension servers and the front-proxy
identity (kube-aggregator's proxy transport and ``transport.NewAuthProxyRoundTripper``).

- The backend's certificate is verified against the APIService's ``caBundle`` for the
  name ``<service>.<namespace>.svc`` — or not at all with ``insecureSkipTLSVerify``
  (no caBundle, no insecure flag: the system's roots, as Go's default).
- Every request carries the front-proxy client certificate
  (``--proxy-client-cert-file``/``--proxy-client-key-file``) so the extension server
  can trust the ``X-Remote-*`` headers, which carry the authenticated user.

One aiohttp session per TLS configuration, closed by ``close``.
"""

from __future__ import annotations

import hashlib
import ssl
from collections.abc import Mapping
from urllib.parse import quote

import aiohttp
from multidict import CIMultiDict

from proxy.request.user import UserInfo

__all__ = ["REMOTE_EXTRA_PREFIX", "REMOTE_GROUP", "REMOTE_UID", "REMOTE_USER", "Transport",
           "auth_proxy_headers"]  # fmt: skip

REMOTE_USER = "X-Remote-User"
REMOTE_UID = "X-Remote-Uid"
REMOTE_GROUP = "X-Remote-Group"
REMOTE_EXTRA_PREFIX = "X-Remote-Extra-"

# never forwarded: hop-by-hop headers, the client's credentials (consumed by our
# authentication filter, as upstream deletes Authorization after authenticating) and
# impersonation (already applied to the user we forward)
_DROPPED = frozenset(
    h.lower()
    for h in ("Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade",
              "TE", "Trailer", "Host", "Authorization", "Content-Length")
)  # fmt: skip


def _escape_extra_key(key: str) -> str:
    """``headerKeyEscape``: extra keys percent-encoded (legal header names)."""
    return quote(
        key, safe="-!#$&'*+.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    )


def auth_proxy_headers(headers: Mapping[str, str], user: UserInfo) -> CIMultiDict[str]:
    """The request headers to send: the client's, minus what must not be forwarded and
    any ``X-Remote-*`` it sent (a client cannot claim an identity), plus the user's."""
    out: CIMultiDict[str] = CIMultiDict()
    for name, value in headers.items():
        low = name.lower()
        if low in _DROPPED or low.startswith("impersonate-") or low.startswith("x-remote-"):
            continue
        out.add(name, value)
    out[REMOTE_USER] = user.name
    if user.uid:
        out[REMOTE_UID] = user.uid
    for group in user.groups:
        out.add(REMOTE_GROUP, group)
    for key, values in user.extra.items():
        for value in values:
            out.add(REMOTE_EXTRA_PREFIX + _escape_extra_key(key), value)
    return out


class Transport:
    """TLS contexts and sessions towards the extension servers."""

    def __init__(self, client_cert_file: str = "", client_key_file: str = "") -> None:
        self.client_cert_file = client_cert_file
        self.client_key_file = client_key_file
        self._sessions: dict[tuple[str, bool], aiohttp.ClientSession] = {}

    def ssl_context(self, ca_bundle: bytes, insecure: bool) -> ssl.SSLContext:
        if insecure:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif ca_bundle:
            ctx = ssl.create_default_context(cadata=ca_bundle.decode("ascii", "replace"))
        else:
            ctx = ssl.create_default_context()
        if self.client_cert_file:
            ctx.load_cert_chain(self.client_cert_file, self.client_key_file or None)
        ctx.set_alpn_protocols(["http/1.1"])
        return ctx

    def session(self, ca_bundle: bytes, insecure: bool) -> aiohttp.ClientSession:
        """The session for this TLS configuration (ValueError/ssl.SSLError: unusable
        caBundle or client certificate)."""
        key = (hashlib.sha256(ca_bundle).hexdigest(), insecure)
        found = self._sessions.get(key)
        if found is None or found.closed:
            connector = aiohttp.TCPConnector(ssl=self.ssl_context(ca_bundle, insecure))
            found = aiohttp.ClientSession(
                connector=connector, auto_decompress=False, timeout=aiohttp.ClientTimeout(None)
            )
            self._sessions[key] = found
        return found

    async def close(self) -> None:
        sessions, self._sessions = list(self._sessions.values()), {}
        for s in sessions:
            await s.close()
