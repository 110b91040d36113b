"""The review APIs' REST storages (upstream's ``pkg/registry/authorization/*`` and
``pkg/registry/authentication/*``): nothing is stored; each create answers the review
with its status, from plain objects and the request's ``Context`` (its user).

- ``authorization.k8s.io/v1`` SubjectAccessReview, SelfSubjectAccessReview,
  LocalSubjectAccessReview (its namespace is the URL's: a different one in the body is
  400), SelfSubjectRulesReview;
- ``authentication.k8s.io/v1`` SelfSubjectReview (the requesting user), TokenReview.

Each is a ``rest.NamedCreater`` whose name is unused (reviews have none; upstream's are
``rest.Creater``s), served by the generic create handler (``proxy.kube.auth_routes``):
mutating admission before the storage, validating admission (``create_validation``)
inside it before the review is answered, as upstream's ``Create`` runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from proxy import apierrors
from proxy.authentication.authenticator import AuthenticationError, TokenAuthenticator
from proxy.authorization.modes import Union
from proxy.authorization.review import access_review, rules_review
from proxy.endpoints.filters.authentication import PLAIN_PORT_USER
from proxy.registry.rest import Context, ValidateObjectFunc
from proxy.request.user import UserInfo
from storage.interfaces import JSONObject

__all__ = [
    "AccessReviewREST",
    "LocalAccessReviewREST",
    "RulesReviewREST",
    "SelfSubjectReviewREST",
    "TokenReviewREST",
    "spec_of",
]

JSON = dict[str, Any]


def _user(ctx: Context) -> UserInfo:
    """The requesting user; on the plain port, the plain port's system:masters user."""
    return ctx.user or PLAIN_PORT_USER


def spec_of(obj: JSON) -> JSON:
    """A review's ``spec`` (``{}`` when missing or not an object)."""
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


@dataclass(frozen=True)
class AccessReviewREST:
    """SubjectAccessReview or SelfSubjectAccessReview (``kind``)."""

    authorizer: Union
    kind: str

    async def create_named(
        self, ctx: Context, name: str, obj: JSONObject, create_validation: ValidateObjectFunc
    ) -> JSONObject:
        await create_validation(obj)
        return access_review(self.authorizer, _user(ctx), obj, self.kind)


@dataclass(frozen=True)
class LocalAccessReviewREST:
    authorizer: Union

    async def create_named(
        self, ctx: Context, name: str, obj: JSONObject, create_validation: ValidateObjectFunc
    ) -> JSONObject:
        body_ns = (obj.get("metadata") or {}).get("namespace")
        if body_ns and body_ns != ctx.namespace:
            raise apierrors.bad_request(
                "the namespace of the provided object does not match the namespace sent on "
                "the request"
            )
        await create_validation(obj)
        answer = access_review(
            self.authorizer, _user(ctx), obj, "LocalSubjectAccessReview", ctx.namespace
        )
        answer["metadata"]["namespace"] = ctx.namespace
        return answer


@dataclass(frozen=True)
class RulesReviewREST:
    authorizer: Union

    async def create_named(
        self, ctx: Context, name: str, obj: JSONObject, create_validation: ValidateObjectFunc
    ) -> JSONObject:
        await create_validation(obj)
        return rules_review(self.authorizer, _user(ctx), obj)


class SelfSubjectReviewREST:
    async def create_named(
        self, ctx: Context, name: str, obj: JSONObject, create_validation: ValidateObjectFunc
    ) -> JSONObject:
        await create_validation(obj)
        return {
            "kind": "SelfSubjectReview",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {**(obj.get("metadata") or {}), "creationTimestamp": None},
            "status": {"userInfo": _user(ctx).to_api()},
        }


@dataclass(frozen=True)
class TokenReviewREST:
    tokens: TokenAuthenticator

    async def create_named(
        self, ctx: Context, name: str, obj: JSONObject, create_validation: ValidateObjectFunc
    ) -> JSONObject:
        await create_validation(obj)
        spec = spec_of(obj)
        token = str(spec.get("token") or "")
        status: JSON = {"authenticated": False}
        try:
            response = await self.tokens.authenticate_token(token) if token else None
        except AuthenticationError:
            response = None
        if response is not None:
            status = {"authenticated": True, "user": response.user.to_api()}
            if response.audiences:
                status["audiences"] = list(response.audiences)
        else:
            status["error"] = "[invalid bearer token, token lookup failed]" if token else ""
        return {
            "kind": "TokenReview",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"creationTimestamp": None},
            "spec": spec,
            "status": status,
        }
