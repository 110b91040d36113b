"""The review APIs' and TokenRequest's storages as the generic handlers serve them
(what upstream's controlplane installs for ``authorization.k8s.io``,
``authentication.k8s.io`` and ``serviceaccounts/token``): a delegate of the generic
handlers that answers the scope of those routes, so that a review or a TokenRequest is
decoded, admitted (mutating, then validating inside the storage, as upstream's
``rest.Creater``/``NamedCreater`` run ``createValidation``) and answered 201 by the
same create handler as any resource. Served where authentication and authorization
exist (the composition root adds the delegate with them)."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from proxy import apierrors
from proxy.endpoints.context import APIContext
from proxy.endpoints.handlers.scope import RequestScope
from proxy.kube.reviews import (
    AccessReviewREST,
    LocalAccessReviewREST,
    RulesReviewREST,
    SelfSubjectReviewREST,
    TokenReviewREST,
)
from proxy.kube.token import ObjectReader, TokenREST
from proxy.registry.resources import ResourceInfo
from proxy.registry.rest import Context, NamedCreater, ValidateObjectFunc
from proxy.request.request_info import RequestInfo
from proxy.server.auth_chain import Auth
from storage.interfaces import JSONObject

__all__ = ["AuthStorages"]


@dataclass(frozen=True)
class _Review:
    """A review's storage as its route serves it: the review resource is its kind."""

    kind: ResourceInfo
    storage: NamedCreater

    async def create_named(
        self, ctx: Context, name: str, obj: JSONObject, create_validation: ValidateObjectFunc
    ) -> JSONObject:
        return await self.storage.create_named(ctx, name, obj, create_validation)


def _collection_only(request: web.Request, info: RequestInfo) -> None:
    """A review is created on its collection's path only: an object path has no route."""
    if info.name:
        raise apierrors.path_not_found()


class AuthStorages:
    """The delegate serving the review APIs and ``serviceaccounts/token``."""

    def __init__(self, ctx: APIContext, auth: Auth, read: ObjectReader) -> None:
        self.ctx = ctx
        authorizer = auth.authorizer
        self.reviews: dict[tuple[str, str], NamedCreater] = {
            ("authorization.k8s.io", "localsubjectaccessreviews"):
                LocalAccessReviewREST(authorizer),
            ("authorization.k8s.io", "subjectaccessreviews"):
                AccessReviewREST(authorizer, "SubjectAccessReview"),
            ("authorization.k8s.io", "selfsubjectaccessreviews"):
                AccessReviewREST(authorizer, "SelfSubjectAccessReview"),
            ("authorization.k8s.io", "selfsubjectrulesreviews"): RulesReviewREST(authorizer),
            ("authentication.k8s.io", "selfsubjectreviews"): SelfSubjectReviewREST(),
            ("authentication.k8s.io", "tokenreviews"): TokenReviewREST(auth.tokens),
        }  # fmt: skip
        self.token = None
        if auth.generator is not None:
            self.token = TokenREST(auth.generator, auth.audiences, auth.max_token_expiration, read)

    def scope(self, resource: ResourceInfo, subresource: str) -> RequestScope | None:
        key = (resource.group, resource.plural)
        review = self.reviews.get(key)
        if review is not None and not subresource:
            return RequestScope(
                resource, "", None, _Review(resource, review), check=_collection_only
            )
        if key == ("", "serviceaccounts") and subresource == "token" and self.token:
            return RequestScope(resource, "token", self.ctx.store(resource), self.token)
        return None
