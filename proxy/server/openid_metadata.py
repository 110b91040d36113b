"""HTTP endpoints of the service-account issuer's OIDC discovery
(``/.well-known/openid-configuration``, ``/openid/v1/jwks``), upstream's
``pkg/serviceaccount`` discovery handlers.

The review APIs and TokenRequest are not here: they are REST storages
(``proxy.kube.reviews``, ``proxy.kube.token``) served by the generic create handler
through a delegate (``proxy.kube.auth_routes``), admitted as any create. The OIDC
paths' authorization (``get`` on a non-resource URL) was done by the filter.
"""

from __future__ import annotations

import base64
from typing import Any

from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from proxy.authentication.service_account import key_id
from proxy.endpoints import responsewriters
from proxy.endpoints.context import API_CONTEXT
from proxy.server.auth_chain import AUTH, Auth

__all__ = ["setup_oidc_routes"]

JSON = dict[str, Any]


def _b64(n: int) -> str:
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def jwks(auth: Auth) -> JSON:
    keys: list[JSON] = []
    for key in auth.public_keys:
        if isinstance(key, rsa.RSAPublicKey):
            numbers = key.public_numbers()
            keys.append(
                {
                    "use": "sig",
                    "kty": "RSA",
                    "kid": key_id(key),
                    "alg": "RS256",
                    "n": _b64(numbers.n),
                    "e": _b64(numbers.e),
                }
            )
        elif isinstance(key, ec.EllipticCurvePublicKey):
            ecn = key.public_numbers()
            size = key.curve.key_size
            crv = {256: "P-256", 384: "P-384", 521: "P-521"}[size]
            alg = {256: "ES256", 384: "ES384", 521: "ES512"}[size]
            keys.append(
                {
                    "use": "sig",
                    "kty": "EC",
                    "kid": key_id(key),
                    "crv": crv,
                    "alg": alg,
                    "x": _b64(ecn.x),
                    "y": _b64(ecn.y),
                }
            )
    return {"keys": keys}


async def _openid_configuration(request: web.Request) -> web.StreamResponse:
    auth = request.app[AUTH]
    settings = request.app[API_CONTEXT].settings
    # kube's default is https://<external address>/openid/v1/jwks; the address the
    # client reached this server by stands in for --external-hostname
    jwks_uri = settings.service_account_jwks_uri or f"https://{request.host}/openid/v1/jwks"
    algs = sorted({v["alg"] for v in jwks(auth)["keys"]})
    doc = {
        "issuer": auth.issuer,
        "jwks_uri": jwks_uri,
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": algs,
    }
    return responsewriters.json_response(doc, headers={"Cache-Control": "public, max-age=3600"})


async def _jwks(request: web.Request) -> web.StreamResponse:
    return responsewriters.json_response(
        jwks(request.app[AUTH]),
        headers={"Cache-Control": "public, max-age=3600"},
        content_type="application/jwk-set+json",
    )


def setup_oidc_routes(app: web.Application) -> None:
    """The service-account issuer's OIDC discovery documents."""
    router = app.router
    for path in ("/.well-known/openid-configuration", "/.well-known/openid-configuration/"):
        router.add_get(path, _openid_configuration)
    for path in ("/openid/v1/jwks", "/openid/v1/jwks/"):
        router.add_get(path, _jwks)
