"""The review APIs' and TokenRequest's routes: which storage answers each path (what
upstream's controlplane installs for ``authorization.k8s.io``, ``authentication.k8s.io``
and ``serviceaccounts/token``), handed by the composition root to the generic handler
(``proxy.endpoints.handlers.auth_reviews``)."""

from __future__ import annotations

from proxy.endpoints.handlers.auth_reviews import (
    AUTHN,
    AUTHZ,
    CreateRoute,
    as_kind,
    as_resource,
)
from proxy.kube.reviews import (
    AccessReviewREST,
    LocalAccessReviewREST,
    RulesReviewREST,
    SelfSubjectReviewREST,
    TokenReviewREST,
)
from proxy.kube.token import TOKEN_REQUEST, ObjectReader, TokenREST
from proxy.registry.resources import Registry
from proxy.registry.rest import NamedCreater
from proxy.server.auth_chain import Auth

__all__ = ["auth_routes"]


def auth_routes(auth: Auth, registry: Registry, read: ObjectReader) -> dict[str, CreateRoute]:
    """The installer of these routes: path -> its storage (``proxy.kube.reviews``,
    ``proxy.kube.token``)."""
    authorizer = auth.authorizer
    reviews: dict[str, tuple[str, str, NamedCreater]] = {
        f"{AUTHZ}/namespaces/{{namespace}}/localsubjectaccessreviews": (
            "authorization.k8s.io", "localsubjectaccessreviews",
            LocalAccessReviewREST(authorizer),
        ),
        f"{AUTHZ}/subjectaccessreviews": (
            "authorization.k8s.io", "subjectaccessreviews",
            AccessReviewREST(authorizer, "SubjectAccessReview"),
        ),
        f"{AUTHZ}/selfsubjectaccessreviews": (
            "authorization.k8s.io", "selfsubjectaccessreviews",
            AccessReviewREST(authorizer, "SelfSubjectAccessReview"),
        ),
        f"{AUTHZ}/selfsubjectrulesreviews": (
            "authorization.k8s.io", "selfsubjectrulesreviews", RulesReviewREST(authorizer),
        ),
        f"{AUTHN}/selfsubjectreviews": (
            "authentication.k8s.io", "selfsubjectreviews", SelfSubjectReviewREST(),
        ),
        f"{AUTHN}/tokenreviews": (
            "authentication.k8s.io", "tokenreviews", TokenReviewREST(auth.tokens),
        ),
    }  # fmt: skip
    routes = {
        path: CreateRoute(
            *as_resource(registry, group, plural), storage, registry.lookup(group, plural)
        )
        for path, (group, plural, storage) in reviews.items()
    }
    if auth.generator is not None:
        token = TokenREST(auth.generator, auth.audiences, auth.max_token_expiration, read)
        routes["/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"] = CreateRoute(
            "serviceaccounts/token", as_kind(TOKEN_REQUEST.api_version, TOKEN_REQUEST.kind),
            token,
        )  # fmt: skip
    return routes
