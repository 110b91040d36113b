"""The request-header authenticator (``k8s.io/apiserver/pkg/authentication/request/
headerrequest``), behind client-certificate verification (``x509.Verifier``): a request
whose TLS client certificate was signed by the ``--requestheader-client-ca-file`` CA
(and, when ``--requestheader-allowed-names`` is set, whose CN is one of them) is a
front proxy's; its user is read from the headers:

- the first non-empty header of ``--requestheader-username-headers`` is the name
  (none: not this authenticator's request, None);
- ``--requestheader-uid-headers``: the UID; ``--requestheader-group-headers``: every
  value of every such header is a group;
- ``--requestheader-extra-headers-prefix``: ``<prefix><key>: value`` adds ``value`` to
  extra ``<key>`` (the key lower-cased and percent-decoded, as upstream).

A certificate the requestheader CA did not sign is not this authenticator's (None: the
x509 authenticator may know it). One it signed whose CN is not allowed is an error
(401), as upstream. A front-proxy certificate is never a user by itself: the x509
authenticator ignores certificates the client CA did not sign (``x509.py``).

Only a leaf signed directly by one of the CA file's certificates is recognised
(intermediate CAs are not followed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote

from aiohttp import web

from proxy.authentication.authenticator import (
    AuthenticationError,
    RequestAuthenticator,
    Response,
)
from proxy.authentication.x509 import CertificatePool, X509Authenticator, peer_certificate
from proxy.request.user import UserInfo

__all__ = ["RequestHeaderAuthenticator", "RequestHeaderConfig", "front_proxy_authenticators"]


@dataclass(frozen=True)
class RequestHeaderConfig:
    """The ``--requestheader-*`` flags."""

    client_ca_file: str
    allowed_names: tuple[str, ...] = ()
    username_headers: tuple[str, ...] = ()
    uid_headers: tuple[str, ...] = ()
    group_headers: tuple[str, ...] = ()
    extra_headers_prefix: tuple[str, ...] = ()


def _first(request: web.Request, names: Sequence[str]) -> str:
    for name in names:
        value = request.headers.get(name, "").strip()
        if value:
            return value
    return ""


class RequestHeaderAuthenticator:
    """See the module docstring."""

    def __init__(self, config: RequestHeaderConfig) -> None:
        self.config = config
        self.pool = CertificatePool.from_file(config.client_ca_file)

    def _user(self, request: web.Request) -> UserInfo | None:
        c = self.config
        name = _first(request, c.username_headers)
        if not name:
            return None
        groups: list[str] = []
        for header in c.group_headers:
            groups += [v for v in request.headers.getall(header, ()) if v]
        extra: dict[str, tuple[str, ...]] = {}
        lowered = [p.lower() for p in c.extra_headers_prefix]
        for header, value in request.headers.items():
            low = header.lower()
            for prefix in lowered:
                if low.startswith(prefix) and len(low) > len(prefix):
                    key = unquote(low[len(prefix) :])
                    extra[key] = (*extra.get(key, ()), value)
        return UserInfo(name=name, uid=_first(request, c.uid_headers), groups=tuple(groups),
                        extra=extra)  # fmt: skip

    async def authenticate(self, request: web.Request) -> Response | None:
        cert = peer_certificate(request)
        if cert is None or not self.pool.signed(cert):
            return None
        allowed = self.config.allowed_names
        common_name = self.pool.common_name(cert)
        if allowed and common_name not in allowed:
            raise AuthenticationError(
                f"x509: subject with cn={common_name} is not in the allowed list"
            )
        user = self._user(request)
        return Response(user) if user is not None else None


def front_proxy_authenticators(
    config: RequestHeaderConfig | None, client_ca_file: str
) -> list[RequestAuthenticator]:
    """The certificate-based authenticators of the secure port, in upstream's order:
    the request-header one first (when ``config``), then x509 (told to ignore
    front-proxy certificates when both CAs are trusted). OSError/ValueError for an
    unreadable CA file."""
    if config is None:
        return [X509Authenticator()]
    if not client_ca_file:  # no client CA: no x509 users (a front proxy is not one)
        return [RequestHeaderAuthenticator(config)]
    client_cas = CertificatePool.from_file(client_ca_file)
    return [RequestHeaderAuthenticator(config), X509Authenticator(client_cas)]
