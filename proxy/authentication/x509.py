"""Client certificates (``--client-ca-file``): CN is the user, each O a group.

The TLS layer has already verified the chain against the client CA (the secure port's
context requests a certificate and verifies any that is sent), so this authenticator
only maps the verified leaf's subject. A request without a certificate is not its
business (None).
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from typing import Any

from aiohttp import web

from proxy.authentication.authenticator import AuthenticationError, Response
from proxy.authentication.user import UserInfo

__all__ = ["X509Authenticator", "user_from_subject"]


def user_from_subject(subject: Sequence[Sequence[tuple[str, Any]]] | tuple[Any, ...]) -> UserInfo:
    """``ssl.getpeercert()['subject']`` -> UserInfo(CN, groups = every O)."""
    common_name = ""
    groups: list[str] = []
    for rdn in subject:
        for key, value in rdn:
            if key == "commonName":
                common_name = str(value)
            elif key == "organizationName":
                groups.append(str(value))
    return UserInfo(name=common_name, groups=tuple(groups))


class X509Authenticator:
    async def authenticate(self, request: web.Request) -> Response | None:
        transport = request.transport
        if transport is None:
            return None
        ssl_object = transport.get_extra_info("ssl_object")
        if not isinstance(ssl_object, ssl.SSLObject):
            return None
        cert = ssl_object.getpeercert()
        if not cert:  # none sent (or no client CA configured)
            return None
        subject = cert.get("subject", ())
        user = user_from_subject(subject if isinstance(subject, tuple) else ())
        if not user.name:
            raise AuthenticationError("x509: subject with cn= is required")
        return Response(user)
