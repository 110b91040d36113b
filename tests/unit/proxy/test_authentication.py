"""Authenticators in isolation: the token file, bearer parsing, the union's
anonymous-vs-401 rule, service-account JWTs (expiry, keys, audiences, issuers, bound
objects), impersonation headers, the client certificate's subject."""

from __future__ import annotations

from typing import Any

import jwt
import pytest
from aiohttp.test_utils import make_mocked_request
from cryptography.hazmat.primitives import serialization
from multidict import CIMultiDict, CIMultiDictProxy

from proxy.authentication.authenticator import (
    AuthenticatedGroupAdder,
    AuthenticationError,
    TokenUnion,
    Union,
    WithAnonymous,
)
from proxy.authentication.bearer_token import BearerToken, bearer_token
from proxy.authentication.service_account import (
    ServiceAccountTokens,
    TokenGenerator,
    key_id,
)
from proxy.authentication.token_file import TokenFile, TokenFileError, parse_token_file
from proxy.authentication.x509 import user_from_subject
from proxy.endpoints.filters.impersonation import (
    ImpersonationError,
    impersonated_user,
    impersonation_requests,
)
from proxy.server.certs import new_rsa_key_pem

ISSUER = "https://kubernetes.default.svc.cluster.local"


def _request(**headers: str) -> Any:
    return make_mocked_request("GET", "/api/v1/pods", headers=headers)


def test_token_file_columns_groups_and_errors() -> None:
    tokens = parse_token_file('t1,alice,u1,"a,b"\n\nt2,bob,u2\n', "f.csv")
    assert tokens["t1"].name == "alice" and tokens["t1"].groups == ("a", "b")
    assert tokens["t2"].uid == "u2" and tokens["t2"].groups == ()
    with pytest.raises(TokenFileError, match="must have at least 3 columns"):
        parse_token_file("t1,alice\n", "f.csv")


def test_bearer_header_parsing_as_upstream() -> None:
    assert bearer_token("Bearer abc") == "abc"
    assert bearer_token("bearer abc extra") == "abc"
    assert bearer_token("Basic abc") == ""
    assert bearer_token("Bearer ") == ""


async def test_bad_token_is_an_error_never_anonymous() -> None:
    tokens = TokenFile(parse_token_file("good,alice,1\n"))
    chain = WithAnonymous(AuthenticatedGroupAdder(Union([BearerToken(TokenUnion([tokens]))])))
    ok = await chain.authenticate(_request(Authorization="Bearer good"))
    assert ok is not None and ok.user.groups == ("system:authenticated",)
    anonymous = await chain.authenticate(_request())
    assert anonymous is not None and anonymous.user.name == "system:anonymous"
    assert anonymous.user.groups == ("system:unauthenticated",)
    with pytest.raises(AuthenticationError) as e:
        await chain.authenticate(_request(Authorization="Bearer bad-secret"))
    assert "bad-secret" not in str(e.value)


def _keys() -> tuple[Any, Any]:
    private = serialization.load_pem_private_key(new_rsa_key_pem(), password=None)
    return private, private.public_key()


class FakeClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def test_service_account_token_round_trip_and_rejections() -> None:
    private, public = _keys()
    clock = FakeClock(1_000_000.0)
    objects: dict[tuple[str, str, str], dict[str, Any]] = {
        ("serviceaccounts", "ns", "robot"): {"metadata": {"uid": "sa-uid"}}
    }

    async def getter(plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        return objects.get((plural, namespace, name))

    gen = TokenGenerator(ISSUER, private, clock)
    auth = ServiceAccountTokens([ISSUER], [public], [ISSUER], getter, clock)
    token, exp = gen.token("ns", "robot", "sa-uid", [ISSUER], 3600)
    assert exp == 1_000_000 + 3600
    assert jwt.get_unverified_header(token)["kid"] == key_id(public)
    response = await auth.authenticate_token(token)
    assert response is not None
    assert response.user.name == "system:serviceaccount:ns:robot"
    assert response.user.groups == ("system:serviceaccounts", "system:serviceaccounts:ns")
    assert response.user.uid == "sa-uid"

    clock.now += 3600 + 61  # past the 60 s leeway
    with pytest.raises(AuthenticationError, match="expired"):
        await auth.authenticate_token(token)
    clock.now = 1_000_000.0

    other_audience, _ = gen.token("ns", "robot", "sa-uid", ["vault"], 3600)
    with pytest.raises(AuthenticationError, match="audiences"):
        await auth.authenticate_token(other_audience)

    _, stranger = _keys()
    wrong_key = ServiceAccountTokens([ISSUER], [stranger], [ISSUER], getter, clock)
    with pytest.raises(AuthenticationError):
        await wrong_key.authenticate_token(token)

    foreign = TokenGenerator("https://elsewhere", private, clock).token("ns", "robot", "x", [], 600)
    assert await auth.authenticate_token(foreign[0]) is None  # not ours: the next one's
    assert await auth.authenticate_token("not-a-jwt") is None

    objects[("serviceaccounts", "ns", "robot")] = {"metadata": {"uid": "recreated"}}
    with pytest.raises(AuthenticationError, match="does not match"):
        await auth.authenticate_token(token)
    del objects[("serviceaccounts", "ns", "robot")]
    with pytest.raises(AuthenticationError, match="not found"):
        await auth.authenticate_token(token)


def _headers(*pairs: tuple[str, str]) -> CIMultiDictProxy[str]:
    return CIMultiDictProxy(CIMultiDict(pairs))


def test_impersonation_requests_and_user() -> None:
    reqs = impersonation_requests(
        _headers(
            ("Impersonate-User", "system:serviceaccount:ns:robot"),
            ("Impersonate-Extra-Scopes", "view"),
        )
    )
    assert [r.kind for r in reqs] == ["ServiceAccount", "UserExtra"]
    user = impersonated_user(reqs, groups_given=False)
    assert user.name == "system:serviceaccount:ns:robot"
    assert user.groups == (
        "system:serviceaccounts",
        "system:serviceaccounts:ns",
        "system:authenticated",
    )
    assert user.extra == {"scopes": ("view",)}
    anon = impersonated_user(
        impersonation_requests(_headers(("Impersonate-User", "system:anonymous"))), False
    )
    assert anon.groups == ("system:unauthenticated",)
    with pytest.raises(ImpersonationError, match="without impersonating a user"):
        impersonation_requests(_headers(("Impersonate-Group", "admins")))


def test_client_certificate_subject() -> None:
    subject = ((("organizationName", "devs"),), (("organizationName", "ops"),),
               (("commonName", "alice"),))  # fmt: skip
    user = user_from_subject(subject)
    assert user.name == "alice" and user.groups == ("devs", "ops")
