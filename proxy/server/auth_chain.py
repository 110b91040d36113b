"""Wiring of the authentication and authorization stages into the server, from the
settings: which authenticators (x509 with ``--client-ca-file``, ``--token-auth-file``,
service-account JWTs, anonymous with ``--anonymous-auth``), which authorizers
(``--authorization-mode``), the RBAC informer with its aggregation controller and the
bootstrap-policy hook, and the service-account token signer.

The filters run in kube-apiserver's order (``DefaultBuildHandlerChain``): authentication
→ impersonation → authorization → the handlers. They act only on the secure port; the
plain port's requests are a system:masters user and pass through unchanged.

``build_auth`` raises ``ConfigError`` for unusable flags (a missing key file, an
unknown mode) so ``watchcache serve`` exits 2 with the message.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware

from proxy.authentication.authenticator import (
    AuthenticatedGroupAdder,
    RequestAuthenticator,
    TokenAuthenticator,
    TokenUnion,
    Union,
    WithAnonymous,
)
from proxy.authentication.bearer_token import BearerToken
from proxy.authentication.legacy_service_account import LegacyServiceAccountTokens
from proxy.authentication.loopback import LoopbackToken
from proxy.authentication.request_header import RequestHeaderConfig, front_proxy_authenticators
from proxy.authentication.service_account import (
    DEFAULT_ISSUER,
    ObjectGetter,
    PublicKey,
    ServiceAccountTokens,
    TokenGenerator,
    load_private_key,
    load_public_keys,
)
from proxy.authentication.token_file import TokenFile, TokenFileError
from proxy.authorization import modes
from proxy.authorization.rbac.aggregation import AggregationController
from proxy.authorization.rbac.escalation import check_escalation
from proxy.authorization.rbac.informer import RBACInformer
from proxy.authorization.rbac.reconcile import RBACPolicy, reconcile_bootstrap_policy
from proxy.authorization.rbac.rule_resolver import RBACAuthorizer, RuleResolver
from proxy.endpoints.filters.authentication import (
    FailedHandler,
    answer_unauthorized,
    authentication_middleware,
)
from proxy.endpoints.filters.authorization import authorization_middleware
from proxy.endpoints.filters.impersonation import impersonation_middleware
from proxy.options.settings import ConfigError, Settings
from proxy.registry.storage_factory import ResourceStorage
from proxy.request.user import UserInfo
from proxy.server.certs import new_rsa_key_pem
from proxy.server.post_start_hooks import PostStartHookContext, PostStartHooks
from storage import errors as serr
from storage.interfaces import GetOptions

__all__ = ["AUTH", "Auth", "add_auth_hooks", "build_auth", "storage_lookup"]

log = logging.getLogger("watchcache.authentication")

RBAC_INFORMER_HOOK = "rbac/informers"


@dataclass
class Auth:
    """The server's authentication and authorization, built once from the settings."""

    authenticator: RequestAuthenticator
    tokens: TokenAuthenticator
    authorizer: modes.Union
    issuer: str
    audiences: tuple[str, ...]
    public_keys: Sequence[PublicKey]
    generator: TokenGenerator | None
    max_token_expiration: float
    informer: RBACInformer | None = None
    # the loopback client's token (system:apiserver), on the plain port too
    loopback: LoopbackToken | None = None

    def check_escalation(
        self, user: UserInfo, plural: str, namespace: str, name: str, obj: dict[str, Any]
    ) -> None:
        """403 when a Role/ClusterRole/(Cluster)RoleBinding write would grant more than
        ``user`` holds (``proxy.authorization.rbac.escalation``); the RBAC kinds'
        strategies call it (``proxy.kube.strategy``)."""
        if self.informer is not None:
            resolver = RuleResolver(self.informer)
            check_escalation(self.authorizer, resolver, user, plural, namespace, name, obj)

    def authentication_filters(
        self, failed: FailedHandler = answer_unauthorized
    ) -> list[Middleware]:
        """Authentication, then impersonation (before flow control, as upstream);
        ``failed`` answers a failed authentication (audited when auditing is on)."""
        return [
            authentication_middleware(self.authenticator, self.audiences, self.loopback, failed),
            impersonation_middleware(self.authorizer),
        ]

    def authorization_filters(self) -> list[Middleware]:
        """Authorization (after flow control, just before the handlers)."""
        return [authorization_middleware(self.authorizer)]


AUTH = web.AppKey("watchcache_auth", Auth)


def _signing_key(settings: Settings) -> str:
    """The signing key's path: the flag's, or one generated once in --cert-dir
    (kube-apiserver requires the flag; this server starts without key management)."""
    if settings.service_account_signing_key_file:
        return settings.service_account_signing_key_file
    path = Path(settings.cert_dir) / "service-account.key"
    if not path.exists():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(new_rsa_key_pem())
            path.chmod(0o600)
        except OSError as e:
            raise ConfigError(f"cannot write {path}: {e.strerror}") from None
    return str(path)


def _authorizer(settings: Settings, informer: RBACInformer | None) -> modes.Union:
    # first, as upstream's superuser authorizer; not instrumented (no type), as upstream
    chain = [modes.NamedAuthorizer("", "privileged", modes.PrivilegedGroups())]
    for mode in settings.authorization_mode:
        if mode == "AlwaysAllow":
            chain.append(modes.NamedAuthorizer(mode, "allow", modes.AlwaysAllow()))
        elif mode == "AlwaysDeny":
            chain.append(modes.NamedAuthorizer(mode, "deny", modes.AlwaysDeny()))
        elif mode == "RBAC":
            assert informer is not None
            chain.append(modes.NamedAuthorizer(mode, "rbac", RBACAuthorizer(informer)))
        else:
            raise ConfigError(
                f'--authorization-mode: authorization mode "{mode}" is not a valid mode '
                f"(supported: {', '.join(modes.MODES)})"
            )
    return modes.Union(chain)


def _certificate_authenticators(settings: Settings) -> list[RequestAuthenticator]:
    """Request-header (``--requestheader-*``, the front proxy's) then x509."""
    config = None
    if settings.requestheader_client_ca_file:
        config = RequestHeaderConfig(
            client_ca_file=settings.requestheader_client_ca_file,
            allowed_names=settings.requestheader_allowed_names,
            username_headers=settings.requestheader_username_headers,
            uid_headers=settings.requestheader_uid_headers,
            group_headers=settings.requestheader_group_headers,
            extra_headers_prefix=settings.requestheader_extra_headers_prefix,
        )
    try:
        return front_proxy_authenticators(config, settings.client_ca_file)
    except (OSError, ValueError) as e:
        raise ConfigError(f"--requestheader-client-ca-file: {e}") from None


def build_auth(
    settings: Settings,
    informer: RBACInformer | None,
    loopback: LoopbackToken | None = None,
    lookup: ObjectGetter | None = None,
) -> Auth:
    """Authentication and authorization of the secure port; the loopback token is tried
    before any other token, as upstream's ``AuthorizeClientBearerToken``; ``lookup``:
    the service-account authenticator's object reads (``storage_lookup``)."""
    issuers = settings.service_account_issuer or (DEFAULT_ISSUER,)
    audiences = settings.api_audiences or issuers
    signing_path = _signing_key(settings)
    try:
        generator = TokenGenerator(issuers[0], load_private_key(signing_path))
        key_files = settings.service_account_key_file or (signing_path,)
        public_keys = load_public_keys(key_files)
    except (OSError, ValueError) as e:
        raise ConfigError(f"service account keys: {e}") from None
    token_authenticators: list[TokenAuthenticator] = [loopback] if loopback else []
    if settings.token_auth_file:
        try:
            token_authenticators.append(TokenFile.from_path(settings.token_auth_file))
        except TokenFileError as e:
            raise ConfigError(str(e)) from None
    sa_lookup = lookup if settings.service_account_lookup else None
    token_authenticators.append(ServiceAccountTokens(issuers, public_keys, audiences, sa_lookup))
    # the Secret-based tokens kube-controller-manager's token controller signs
    token_authenticators.append(LegacyServiceAccountTokens(public_keys, audiences, sa_lookup))
    tokens = TokenUnion(token_authenticators)
    chain: RequestAuthenticator = AuthenticatedGroupAdder(
        Union([*_certificate_authenticators(settings), BearerToken(tokens)])
    )
    if settings.anonymous_auth:
        chain = WithAnonymous(chain)
    return Auth(
        authenticator=chain,
        tokens=tokens,
        authorizer=_authorizer(settings, informer),
        issuer=issuers[0],
        audiences=tuple(audiences),
        public_keys=public_keys,
        generator=generator,
        max_token_expiration=settings.service_account_max_token_expiration,
        informer=informer,
        loopback=loopback,
    )


def add_auth_hooks(auth: Auth, policy: RBACPolicy, hooks: PostStartHooks) -> None:
    """With RBAC, the post-start hooks of the RBAC informer, the ClusterRole aggregation
    controller and the reconciler of the bootstrap ``policy`` (``rbac/bootstrap-roles``:
    up once the policy is stored and the informer saw it, so a ready server answers
    /healthz anonymously and system:masters by its binding)."""
    if auth.informer is not None:
        _add_rbac_hooks(auth.informer, policy, hooks)


def storage_lookup(storage_for: Callable[[str], ResourceStorage]) -> ObjectGetter:
    """The service-account authenticator's object lookups (``--service-account-lookup``:
    is the account, its secret or bound pod still there?), read from the watch cache
    (resourceVersion 0); ``storage_for`` is called per lookup, once the storages are
    built."""

    async def get(plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        rs = storage_for(plural)
        try:
            stored = await rs.store.get(rs.object_key(namespace, name), GetOptions("0"))
        except serr.NotFound:
            return None
        return stored.obj

    return get


def _add_rbac_hooks(informer: RBACInformer, policy: RBACPolicy, hooks: PostStartHooks) -> None:
    aggregation = AggregationController(informer)

    async def run_informer(hook: PostStartHookContext) -> None:
        await informer.run()

    async def run_aggregation(hook: PostStartHookContext) -> None:
        await aggregation.run(hook.loopback)

    changed = asyncio.Event()
    informer.on_change(lambda plural: changed.set())

    async def bootstrap_roles(hook: PostStartHookContext) -> None:
        await reconcile_bootstrap_policy(hook.loopback, policy)
        while not _policy_seen(informer, policy):  # up once the authorizer sees the bindings
            changed.clear()
            await changed.wait()

    hooks.add(RBAC_INFORMER_HOOK, run_informer, ready=informer.synced.is_set)
    hooks.add("rbac/clusterrole-aggregation", run_aggregation, after=(RBAC_INFORMER_HOOK,),
              ready=lambda: True, elected=True)  # fmt: skip
    hooks.add("rbac/bootstrap-roles", bootstrap_roles, after=(RBAC_INFORMER_HOOK,))


def _policy_seen(informer: RBACInformer, policy: RBACPolicy) -> bool:
    seen = informer.cluster_bindings
    return all(b["metadata"]["name"] in seen for b in policy.cluster_role_bindings)
