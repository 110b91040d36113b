"""HTTP endpoints of authentication and authorization: the review APIs
(``authorization.k8s.io/v1`` SelfSubjectAccessReview, SubjectAccessReview,
LocalSubjectAccessReview, SelfSubjectRulesReview; ``authentication.k8s.io/v1``
SelfSubjectReview, TokenReview), TokenRequest (``serviceaccounts/<name>/token``) and
the service-account issuer's OIDC discovery (``/.well-known/openid-configuration``,
``/openid/v1/jwks``).

These routes are registered before the generic resource routes. Their authorization
(``create`` on the review resource, ``create`` on ``serviceaccounts/token``, ``get`` on
the OIDC paths) was done by the filter like any request's. On the plain port the user
is the plain port's system:masters user.
"""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from proxy import apierrors
from proxy.apierrors import FieldError
from proxy.authentication.authenticator import AuthenticationError
from proxy.authentication.filter import PLAIN_PORT_USER
from proxy.authentication.service_account import BoundObject, key_id
from proxy.authorization.review import access_review, rules_review
from proxy.endpoints import decoding, negotiation, responsewriters
from proxy.registry.resources import ResourceInfo
from proxy.request.user import UserInfo, request_user
from proxy.server.auth_chain import AUTH, Auth
from proxy.server.context import API_CONTEXT
from storage.interfaces import GetOptions

__all__ = ["setup_auth_routes"]

JSON = dict[str, Any]

AUTHZ = "/apis/authorization.k8s.io/v1"
AUTHN = "/apis/authentication.k8s.io/v1"
MIN_EXPIRATION = 600
MAX_EXPIRATION = 1 << 32
DEFAULT_EXPIRATION = 3600


def _user(request: web.Request) -> UserInfo:
    return request_user(request) or PLAIN_PORT_USER


def _resource(request: web.Request, group: str, plural: str) -> ResourceInfo:
    resource = request.app[API_CONTEXT].registry.lookup(group, plural)
    if resource is None:  # pragma: no cover - served by construction
        raise apierrors.not_found(plural, "")
    return resource


async def _body(request: web.Request, resource: ResourceInfo) -> JSON:
    """A review's JSON, YAML or (as kubectl's typed clients send it) protobuf body."""
    if request.method != "POST":
        raise apierrors.method_not_supported(resource.qualified, request.method.lower())
    # the output is negotiated first, as upstream's create handler: a review has no
    # Table convertor, so a Table is 406 (the conformance spec "should return a 406 for
    # a backend which does not implement metadata")
    negotiation.response_format(request, resource=resource, table=False)
    data = await decoding.read_body(request)
    return await decoding.decoded_object(data, negotiation.media_type_of(request), resource)


def _spec(obj: JSON) -> JSON:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _created(request: web.Request, obj: JSON) -> web.Response:
    """201 with the answer, as protobuf when the client prefers it (kubectl does)."""
    return responsewriters.preferred_response(request, obj, 201)


async def _access_review(request: web.Request) -> web.StreamResponse:
    plural = request.match_info["plural"]
    kinds = {
        "selfsubjectaccessreviews": "SelfSubjectAccessReview",
        "subjectaccessreviews": "SubjectAccessReview",
    }
    if plural == "selfsubjectrulesreviews":
        obj = await _body(request, _resource(request, "authorization.k8s.io", plural))
        return _created(request, rules_review(request.app[AUTH].authorizer, _user(request), obj))
    if plural not in kinds:
        raise web.HTTPNotFound()
    obj = await _body(request, _resource(request, "authorization.k8s.io", plural))
    return _created(
        request, access_review(request.app[AUTH].authorizer, _user(request), obj, kinds[plural])
    )


async def _local_access_review(request: web.Request) -> web.StreamResponse:
    resource = _resource(request, "authorization.k8s.io", "localsubjectaccessreviews")
    obj = await _body(request, resource)
    namespace = request.match_info["namespace"]
    body_ns = (obj.get("metadata") or {}).get("namespace")
    if body_ns and body_ns != namespace:
        raise apierrors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    answer = access_review(
        request.app[AUTH].authorizer, _user(request), obj, "LocalSubjectAccessReview", namespace
    )
    answer["metadata"]["namespace"] = namespace
    return _created(request, answer)


async def _self_subject_review(request: web.Request) -> web.StreamResponse:
    obj = await _body(request, _resource(request, "authentication.k8s.io", "selfsubjectreviews"))
    return _created(
        request,
        {
            "kind": "SelfSubjectReview",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {**(obj.get("metadata") or {}), "creationTimestamp": None},
            "status": {"userInfo": _user(request).to_api()},
        },
    )


async def _token_review(request: web.Request) -> web.StreamResponse:
    obj = await _body(request, _resource(request, "authentication.k8s.io", "tokenreviews"))
    spec = _spec(obj)
    token = str(spec.get("token") or "")
    auth = request.app[AUTH]
    status: JSON = {"authenticated": False}
    try:
        response = await auth.tokens.authenticate_token(token) if token else None
    except AuthenticationError:
        response = None
    if response is not None:
        status = {"authenticated": True, "user": response.user.to_api()}
        if response.audiences:
            status["audiences"] = list(response.audiences)
    else:
        status["error"] = "[invalid bearer token, token lookup failed]" if token else ""
    return _created(
        request,
        {
            "kind": "TokenReview",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"creationTimestamp": None},
            "spec": spec,
            "status": status,
        },
    )


def _expiration(spec: JSON, auth: Auth, name: str) -> int:
    raw = spec.get("expirationSeconds")
    seconds = DEFAULT_EXPIRATION if raw is None else raw
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        raise apierrors.bad_request("spec.expirationSeconds must be an integer")
    errors = []
    if seconds < MIN_EXPIRATION:
        errors.append(
            FieldError.invalid(
                "spec.expirationSeconds", seconds, "may not specify a duration less than 10 minutes"
            )
        )
    elif seconds > MAX_EXPIRATION:
        errors.append(
            FieldError.invalid(
                "spec.expirationSeconds",
                seconds,
                "may not specify a duration larger than 2^32 seconds",
            )
        )
    if errors:
        raise apierrors.invalid("TokenRequest.authentication.k8s.io", name, errors)
    if auth.max_token_expiration and seconds > auth.max_token_expiration:
        seconds = int(auth.max_token_expiration)
    return seconds


async def _get(request: web.Request, plural: str, namespace: str, name: str) -> JSON:
    ctx = request.app[API_CONTEXT]
    resource = ctx.registry.lookup("", plural)
    assert resource is not None
    stored = await ctx.store(resource).get(namespace, name, GetOptions())
    return stored.obj


async def _token_request(request: web.Request) -> web.StreamResponse:
    """``kubectl create token NAME``: a bound service-account token."""
    auth = request.app[AUTH]
    namespace, name = request.match_info["namespace"], request.match_info["name"]
    if request.method != "POST":
        raise apierrors.method_not_supported("serviceaccounts/token", request.method.lower())
    data = await decoding.read_body(request)
    media_type = negotiation.media_type_of(request)
    obj = await decoding.decoded_kind(data, media_type, "authentication.k8s.io/v1", "TokenRequest")
    spec = _spec(obj)
    seconds = _expiration(spec, auth, name)
    sa = await _get(request, "serviceaccounts", namespace, name)
    bound = None
    ref = spec.get("boundObjectRef")
    if isinstance(ref, dict) and ref.get("name"):
        kind = str(ref.get("kind", ""))
        plural = {"Pod": "pods", "Secret": "secrets"}.get(kind)
        if plural is None:
            raise apierrors.bad_request(f"cannot bind token to object of type {kind}")
        target = await _get(request, plural, namespace, str(ref["name"]))
        uid = str(target["metadata"].get("uid", ""))
        if ref.get("uid") and ref["uid"] != uid:
            raise apierrors.conflict(
                plural,
                str(ref["name"]),
                f"the UID in the bound object reference ({ref['uid']}) "
                f"does not match the UID in record. The object might "
                f"have been deleted and then recreated",
            )
        bound = BoundObject(kind, str(ref["name"]), uid)
    audiences = [str(a) for a in spec.get("audiences") or ()] or list(auth.audiences)
    assert auth.generator is not None
    token, exp = auth.generator.token(
        namespace, name, str(sa["metadata"].get("uid", "")), audiences, seconds, bound
    )
    expires = dt.datetime.fromtimestamp(exp, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    out_spec: JSON = {
        "audiences": audiences,
        "expirationSeconds": seconds,
        "boundObjectRef": ref if bound is not None else None,
    }
    return _created(
        request,
        {
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": None},
            "spec": out_spec,
            "status": {"token": token, "expirationTimestamp": expires},
        },
    )


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


def setup_auth_routes(app: web.Application) -> None:
    """Register before the generic /api and /apis routes."""
    router = app.router
    router.add_route(
        "*", f"{AUTHZ}/namespaces/{{namespace}}/localsubjectaccessreviews", _local_access_review
    )
    router.add_route("*", f"{AUTHZ}/{{plural}}", _access_review)
    router.add_route("*", f"{AUTHN}/selfsubjectreviews", _self_subject_review)
    router.add_route("*", f"{AUTHN}/tokenreviews", _token_review)
    router.add_route(
        "*", "/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", _token_request
    )
    for path in ("/.well-known/openid-configuration", "/.well-known/openid-configuration/"):
        router.add_get(path, _openid_configuration)
    for path in ("/openid/v1/jwks", "/openid/v1/jwks/"):
        router.add_get(path, _jwks)
