"""HTTP endpoints of authentication and authorization: the review APIs
(``authorization.k8s.io/v1`` SelfSubjectAccessReview, SubjectAccessReview,
LocalSubjectAccessReview, SelfSubjectRulesReview; ``authentication.k8s.io/v1``
SelfSubjectReview, TokenReview), TokenRequest (``serviceaccounts/<name>/token``) and
the service-account issuer's OIDC discovery (``/.well-known/openid-configuration``,
``/openid/v1/jwks``).

Each review and TokenRequest route is a storage (``rest.NamedCreater``, over plain
objects: ``proxy.kube.reviews``, ``proxy.kube.token``) the composition root maps a path
to; the handler here decodes, calls it and answers 201. These routes are registered
before the generic resource routes. Their authorization
(``create`` on the review resource, ``create`` on ``serviceaccounts/token``, ``get`` on
the OIDC paths) was done by the filter like any request's. On the plain port the user
is the plain port's system:masters user.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from proxy import apierrors
from proxy.authentication.filter import PLAIN_PORT_USER
from proxy.authentication.service_account import key_id
from proxy.endpoints import decoding, negotiation, responsewriters
from proxy.registry.resources import Registry, ResourceInfo
from proxy.registry.rest import Context, NamedCreater, validate_nothing
from proxy.request.user import UserInfo, request_user
from proxy.server.auth_chain import AUTH, Auth
from proxy.server.context import API_CONTEXT

__all__ = ["AUTHN", "AUTHZ", "CreateRoute", "as_kind", "as_resource", "setup_auth_routes"]

JSON = dict[str, Any]

AUTHZ = "/apis/authorization.k8s.io/v1"
AUTHN = "/apis/authentication.k8s.io/v1"


def _user(request: web.Request) -> UserInfo:
    return request_user(request) or PLAIN_PORT_USER


Decode = Callable[[bytes, str], Awaitable[JSON]]


@dataclass(frozen=True)
class CreateRoute:
    """One review (or TokenRequest) route: the storage that answers it and how its
    body decodes (a review as its resource's kind, a subresource as its own kind)."""

    qualified: str  # as errors name it
    decode: Decode
    storage: NamedCreater
    # the review's resource, as the answer is negotiated for it (None: TokenRequest)
    kind: ResourceInfo | None = None


async def _serve(request: web.Request, route: CreateRoute) -> web.StreamResponse:
    """POST: the body decoded, the storage's answer as 201 (as protobuf when the client
    prefers it: kubectl's typed clients do)."""
    if request.method != "POST":
        raise apierrors.method_not_supported(route.qualified, request.method.lower())
    if route.kind is not None:
        # the output is negotiated first, as upstream's create handler: a review has no
        # Table convertor, so a Table is 406 (the conformance spec "should return a 406
        # for a backend which does not implement metadata")
        negotiation.response_format(request, resource=route.kind, table=False)
    data = await decoding.read_body(request)
    obj = await route.decode(data, negotiation.media_type_of(request))
    namespace = request.match_info.get("namespace", "")
    ctx = Context(namespace=namespace, user=_user(request))
    answer = await route.storage.create_named(
        ctx, request.match_info.get("name", ""), obj, validate_nothing
    )
    return responsewriters.preferred_response(request, answer, 201)


def as_resource(registry: Registry, group: str, plural: str) -> tuple[str, Decode]:
    resource = registry.lookup(group, plural)
    if resource is None:  # pragma: no cover - served by construction
        raise ValueError(f"{plural}.{group} is not served")
    served = resource

    async def decode(data: bytes, media_type: str) -> JSON:
        return await decoding.decoded_object(data, media_type, served)

    return served.qualified, decode


def as_kind(api_version: str, kind: str) -> Decode:
    async def decode(data: bytes, media_type: str) -> JSON:
        return await decoding.decoded_kind(data, media_type, api_version, kind)

    return decode


async def _not_found(request: web.Request) -> web.StreamResponse:
    raise web.HTTPNotFound()


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


def setup_auth_routes(app: web.Application, routes: Mapping[str, CreateRoute]) -> None:
    """Register before the generic /api and /apis routes: ``routes`` (path -> the
    review's or TokenRequest's route, given by the composition root) and the OIDC
    discovery documents."""
    router = app.router
    for path, route in routes.items():
        router.add_route("*", path, functools.partial(_serve, route=route))
    # another name under authorization.k8s.io/v1 than its reviews: 404, no route
    router.add_route("*", f"{AUTHZ}/{{plural}}", _not_found)
    for path in ("/.well-known/openid-configuration", "/.well-known/openid-configuration/"):
        router.add_get(path, _openid_configuration)
    for path in ("/openid/v1/jwks", "/openid/v1/jwks/"):
        router.add_get(path, _jwks)
