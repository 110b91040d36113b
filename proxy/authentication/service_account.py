"""Service-account tokens: bound JWTs signed by ``--service-account-signing-key-file``,
verified with ``--service-account-key-file``, as kube-apiserver's ``serviceaccount``
token authenticator and generator (``pkg/serviceaccount``).

Claims of a token this server issues (TokenRequest)::

    iss, sub = system:serviceaccount:NS:NAME, aud, iat, nbf, exp, jti,
    kubernetes.io: {namespace, serviceaccount: {name, uid}, pod|secret|node: {name, uid}}

Validation, in order: the issuer is one of ours (else the token is not ours: None, so
another token authenticator may try); the signature verifies with one of the keys; the
token is neither expired nor not yet valid (60 s leeway, as kube's); an audience is one
of ``--api-audiences``; with ``--service-account-lookup`` the service account and the
bound object still exist with the same uid. Failures are ``AuthenticationError`` whose
message never contains the token.

``key_id`` is kube's: the unpadded base64url SHA-256 of the public key's DER
SubjectPublicKeyInfo, so the JWKS served at ``/openid/v1/jwks`` names the same keys.
"""

from __future__ import annotations

import base64
import hashlib
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from proxy.authentication.authenticator import AuthenticationError, Response
from proxy.request.user import (
    UserInfo,
    service_account_groups,
    service_account_username,
)

__all__ = [
    "DEFAULT_ISSUER",
    "BoundObject",
    "ObjectGetter",
    "ServiceAccountTokens",
    "TokenGenerator",
    "key_id",
    "load_private_key",
    "load_public_keys",
    "verify_signature",
]

DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"
LEEWAY_SECONDS = 60
PRIVATE_CLAIMS = "kubernetes.io"

PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey
PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey

# (resource plural, namespace, name) -> the object, or None when absent
ObjectGetter = Callable[[str, str, str], Awaitable[dict[str, Any] | None]]


def key_id(key: PublicKey) -> str:
    der = key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return base64.urlsafe_b64encode(hashlib.sha256(der).digest()).rstrip(b"=").decode()


def _algorithm(key: PublicKey | PrivateKey) -> str:
    if isinstance(key, rsa.RSAPublicKey | rsa.RSAPrivateKey):
        return "RS256"
    return {256: "ES256", 384: "ES384", 521: "ES512"}[key.curve.key_size]


def _pem_blocks(data: bytes) -> list[bytes]:
    blocks, current = [], bytearray()
    for line in data.splitlines(keepends=True):
        if line.startswith(b"-----BEGIN"):
            current = bytearray(line)
        elif current:
            current += line
            if line.startswith(b"-----END"):
                blocks.append(bytes(current))
                current = bytearray()
    return blocks


def load_private_key(path: str) -> PrivateKey:
    data = Path(path).read_bytes()
    key = serialization.load_pem_private_key(data, password=None)
    if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey):
        raise ValueError(f"{path}: an RSA or ECDSA private key is required")
    return key


def load_public_keys(paths: Sequence[str]) -> list[PublicKey]:
    """Every public key in the PEM files: public keys, private keys' public halves,
    certificates' keys."""
    from cryptography import x509

    keys: list[PublicKey] = []
    for path in paths:
        for block in _pem_blocks(Path(path).read_bytes()):
            key: Any
            if b"PRIVATE KEY" in block.split(b"\n", 1)[0]:
                key = serialization.load_pem_private_key(block, password=None).public_key()
            elif b"CERTIFICATE" in block.split(b"\n", 1)[0]:
                key = x509.load_pem_x509_certificate(block).public_key()
            else:
                key = serialization.load_pem_public_key(block)
            if isinstance(key, rsa.RSAPublicKey | ec.EllipticCurvePublicKey):
                keys.append(key)
        if not keys:
            raise ValueError(f"{path}: no RSA or ECDSA key found")
    return keys


@dataclass(frozen=True)
class BoundObject:
    kind: str  # Pod, Secret or Node
    name: str
    uid: str


class TokenGenerator:
    """Signs service-account tokens (TokenRequest) with the signing key."""

    def __init__(self, issuer: str, key: PrivateKey, clock: Callable[[], float] = time.time):
        self.issuer = issuer
        self.key = key
        self.kid = key_id(key.public_key())
        self.clock = clock

    def token(
        self,
        namespace: str,
        name: str,
        uid: str,
        audiences: Sequence[str],
        expiration_seconds: int,
        bound: BoundObject | None = None,
    ) -> tuple[str, int]:
        """(the JWT, its exp as Unix seconds)."""
        now = int(self.clock())
        private: dict[str, Any] = {
            "namespace": namespace,
            "serviceaccount": {"name": name, "uid": uid},
        }
        if bound is not None:
            private[bound.kind.lower()] = {"name": bound.name, "uid": bound.uid}
        claims = {
            "iss": self.issuer,
            "sub": service_account_username(namespace, name),
            "aud": list(audiences),
            "iat": now,
            "nbf": now,
            "exp": now + expiration_seconds,
            "jti": str(uuid.uuid4()),
            PRIVATE_CLAIMS: private,
        }
        token = jwt.encode(
            claims, self.key, algorithm=_algorithm(self.key), headers={"kid": self.kid}
        )
        return token, now + expiration_seconds


def _audiences(aud: object) -> tuple[str, ...]:
    """The ``aud`` claim as go-jose's Audience reads it: absent, a string or an array of
    strings; anything else makes the token invalid (401)."""
    if aud is None:
        return ()
    if isinstance(aud, str):
        return (aud,)
    if isinstance(aud, list) and all(isinstance(a, str) for a in aud):
        return tuple(aud)
    raise AuthenticationError(
        "invalid service account token: square/go-jose/jwt: expected string or array "
        "value to unmarshal to Audience"
    )


def _check_private_claims(private: dict[str, Any]) -> None:
    """The ``kubernetes.io`` claims decode into upstream's typed privateClaims: a
    namespace that is a string, and references whose name and uid are strings;
    anything else makes the token invalid (401), never a user named by a dict."""
    refs = [private.get(k) for k in ("serviceaccount", "pod", "secret", "node")]
    typed = isinstance(private.get("namespace", ""), str) and all(
        ref is None
        or (isinstance(ref, dict) and all(isinstance(ref.get(f, ""), str) for f in ("name", "uid")))
        for ref in refs
    )
    if not typed:
        raise AuthenticationError(
            "invalid service account token: json: cannot unmarshal the kubernetes.io claims"
        )


def verify_signature(token: str, keys: dict[str, PublicKey]) -> dict[str, Any]:
    """The claims of ``token`` once its signature verifies with one of ``keys`` (by
    key id: the header's ``kid`` first); AuthenticationError otherwise."""
    header = jwt.get_unverified_header(token)
    candidates = list(keys.values())
    kid = header.get("kid")
    if isinstance(kid, str) and kid in keys:
        candidates = [keys[kid]]
    for key in candidates:
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[_algorithm(key)],
                options={"verify_aud": False, "verify_exp": False, "verify_nbf": False},
            )
            return claims
        except jwt.InvalidSignatureError:
            continue
        except jwt.InvalidTokenError as e:
            raise AuthenticationError(f"invalid service account token: {e}") from None
    raise AuthenticationError(
        "invalid bearer token, square/go-jose: error in cryptographic primitive"
    )


class ServiceAccountTokens:
    """The token authenticator for service-account JWTs (see the module docstring)."""

    def __init__(
        self,
        issuers: Sequence[str],
        keys: Sequence[PublicKey],
        audiences: Sequence[str],
        getter: ObjectGetter | None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.issuers = tuple(issuers)
        self.keys = {key_id(k): k for k in keys}
        self.audiences = tuple(audiences)
        self.getter = getter
        self.clock = clock

    def _verify(self, token: str) -> dict[str, Any]:
        return verify_signature(token, self.keys)

    def _check_times(self, claims: dict[str, Any]) -> None:
        now = self.clock()
        exp, nbf = claims.get("exp"), claims.get("nbf")
        if not isinstance(exp, int | float):
            raise AuthenticationError("service account token has no expiry")
        if now > exp + LEEWAY_SECONDS:
            raise AuthenticationError("service account token has expired")
        if isinstance(nbf, int | float) and now < nbf - LEEWAY_SECONDS:
            raise AuthenticationError("service account token is not valid yet")

    def _check_audience(self, claims: dict[str, Any]) -> tuple[str, ...]:
        token_auds = _audiences(claims.get("aud"))
        if self.audiences and not set(token_auds) & set(self.audiences):
            raise AuthenticationError(
                f"token audiences {list(token_auds)!r} is invalid for the target audiences "
                f"{list(self.audiences)!r}"
            )
        return token_auds

    async def _lookup(self, plural: str, namespace: str, ref: dict[str, Any]) -> None:
        assert self.getter is not None
        name, uid = str(ref.get("name", "")), str(ref.get("uid", ""))
        obj = await self.getter(plural, namespace, name)
        if obj is None:
            raise AuthenticationError(f"{plural} {name!r} not found")
        actual = str(obj.get("metadata", {}).get("uid", ""))
        if uid and actual != uid:
            raise AuthenticationError(
                f"{plural} {name!r} UID ({actual}) does not match claim ({uid})"
            )

    async def authenticate_token(self, token: str) -> Response | None:
        if not token.isascii():
            return None  # no compact JWS (base64url and dots): another authenticator's
        try:
            unverified = jwt.decode(token, options={"verify_signature": False})
        except jwt.InvalidTokenError:
            return None  # not a JWT: another token authenticator's
        if unverified.get("iss") not in self.issuers:
            return None
        claims = self._verify(token)
        self._check_times(claims)
        audiences = self._check_audience(claims)
        private = claims.get(PRIVATE_CLAIMS)
        if not isinstance(private, dict):
            raise AuthenticationError("service account token has no kubernetes.io claims")
        _check_private_claims(private)
        namespace = str(private.get("namespace", ""))
        sa = private.get("serviceaccount") or {}
        if not namespace or not isinstance(sa, dict) or not sa.get("name"):
            raise AuthenticationError("service account token names no service account")
        if self.getter is not None:
            await self._lookup("serviceaccounts", namespace, sa)
            for kind, plural in (("pod", "pods"), ("secret", "secrets")):
                ref = private.get(kind)
                if isinstance(ref, dict):
                    await self._lookup(plural, namespace, ref)
        extra: dict[str, tuple[str, ...]] = {}
        pod = private.get("pod")
        if isinstance(pod, dict):
            extra["authentication.kubernetes.io/pod-name"] = (str(pod.get("name", "")),)
            extra["authentication.kubernetes.io/pod-uid"] = (str(pod.get("uid", "")),)
        if claims.get("jti"):
            extra["authentication.kubernetes.io/credential-id"] = (f"JTI={claims['jti']}",)
        user = UserInfo(
            name=service_account_username(namespace, str(sa["name"])),
            uid=str(sa.get("uid", "")),
            groups=service_account_groups(namespace),
            extra=extra,
        )
        return Response(user, audiences)
