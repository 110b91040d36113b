"""Secret-based (legacy) service-account tokens, as kube-apiserver's legacy token
authenticator (``pkg/serviceaccount/legacy.go``): the JWTs kube-controller-manager's
token controller writes into a ``kubernetes.io/service-account-token`` Secret, signed
with its ``--service-account-private-key-file`` (the lab's ``service-account.key``, the
server's signing key) under the issuer ``kubernetes/serviceaccount``::

    iss: kubernetes/serviceaccount, sub: system:serviceaccount:NS:NAME,
    kubernetes.io/serviceaccount/{namespace, secret.name, service-account.name,
                                  service-account.uid}

They carry no expiry and no audience (so they are good for the API's audiences). With
``--service-account-lookup`` (the default) the Secret must still exist, not be
deleting, hold this very token and not be labelled
``kubernetes.io/legacy-token-invalid-since``, and the ServiceAccount must exist with
the claimed UID. Not done here: the ``kubernetes.io/legacy-token-last-used`` label
upstream patches onto the Secret on each use (kube-controller-manager's legacy token
cleaner reads it to delete tokens unused for a year).
"""

from __future__ import annotations

import base64
import hmac
from collections.abc import Sequence
from typing import Any

import jwt

from proxy.authentication.authenticator import AuthenticationError, Response
from proxy.authentication.service_account import (
    ObjectGetter,
    PublicKey,
    key_id,
    verify_signature,
)
from proxy.request.user import UserInfo, service_account_groups, service_account_username

__all__ = ["LEGACY_ISSUER", "LegacyServiceAccountTokens"]

LEGACY_ISSUER = "kubernetes/serviceaccount"
INVALID_SINCE_LABEL = "kubernetes.io/legacy-token-invalid-since"
_CLAIM = "kubernetes.io/serviceaccount/"
INVALIDATED = "Token has been invalidated"


class LegacyServiceAccountTokens:
    """The token authenticator for legacy service-account JWTs."""

    def __init__(
        self, keys: Sequence[PublicKey], audiences: Sequence[str], getter: ObjectGetter | None
    ) -> None:
        self.keys = {key_id(k): k for k in keys}
        self.audiences = tuple(audiences)
        self.getter = getter

    async def authenticate_token(self, token: str) -> Response | None:
        if not token.isascii():
            return None
        try:
            unverified = jwt.decode(token, options={"verify_signature": False})
        except jwt.InvalidTokenError:
            return None
        if unverified.get("iss") != LEGACY_ISSUER:
            return None  # a bound token (or not ours): another authenticator's
        claims = verify_signature(token, self.keys)
        namespace, name, uid, secret = _validated_claims(claims)
        if self.getter is not None:
            await self._lookup(token, namespace, name, uid, secret)
        user = UserInfo(
            name=service_account_username(namespace, name),
            uid=uid,
            groups=service_account_groups(namespace),
        )
        return Response(user, self.audiences)

    async def _lookup(self, token: str, namespace: str, name: str, uid: str, secret: str) -> None:
        """The Secret still holds this token and the ServiceAccount is the claimed one."""
        assert self.getter is not None
        stored = await self.getter("secrets", namespace, secret)
        if stored is None or (stored.get("metadata") or {}).get("deletionTimestamp"):
            raise AuthenticationError(INVALIDATED)
        held = _secret_token(stored)
        if not hmac.compare_digest(held, token.encode()):
            raise AuthenticationError("Token does not match server's copy")
        account = await self.getter("serviceaccounts", namespace, name)
        if account is None:
            raise AuthenticationError(f'serviceaccounts "{name}" not found')
        meta = account.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            raise AuthenticationError(f"ServiceAccount {namespace}/{name} has been deleted")
        if str(meta.get("uid") or "") != uid:
            raise AuthenticationError(
                f"ServiceAccount UID ({meta.get('uid') or ''}) does not match claim ({uid})"
            )
        if ((stored.get("metadata") or {}).get("labels") or {}).get(INVALID_SINCE_LABEL):
            raise AuthenticationError(
                f"the token in secret {namespace}/{secret} for service account "
                f"{namespace}/{name} has been marked invalid. Use tokens from the "
                "TokenRequest API or manually created secret-based tokens, or remove the "
                f"'{INVALID_SINCE_LABEL}' label from the secret to temporarily allow use "
                "of this token"
            )


def _validated_claims(claims: dict[str, Any]) -> tuple[str, str, str, str]:
    """(namespace, service account, its uid, secret) after upstream's claim checks."""
    subject = str(claims.get("sub") or "")
    if not subject:
        raise AuthenticationError("sub claim is missing")
    values = {}
    for claim, words in (
        ("namespace", "namespace"),
        ("secret.name", "secretName"),
        ("service-account.name", "serviceAccountName"),
        ("service-account.uid", "serviceAccountUID"),
    ):
        value = claims.get(_CLAIM + claim)
        if not isinstance(value, str) or not value:
            raise AuthenticationError(f"{words} claim is missing")
        values[claim] = value
    namespace, name = values["namespace"], values["service-account.name"]
    if subject != service_account_username(namespace, name):
        raise AuthenticationError("sub claim is invalid")
    return namespace, name, values["service-account.uid"], values["secret.name"]


def _secret_token(secret: dict[str, Any]) -> bytes:
    """``data.token`` of a Secret as stored (base64 in JSON)."""
    value = (secret.get("data") or {}).get("token")
    if not isinstance(value, str):
        return b""
    try:
        return base64.b64decode(value, validate=True)
    except ValueError:
        return b""
