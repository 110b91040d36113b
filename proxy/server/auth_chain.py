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
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
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
from proxy.authentication.filter import authentication_middleware, is_secure
from proxy.authentication.impersonation import impersonation_middleware
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
from proxy.authorization.filter import authorization_middleware
from proxy.authorization.rbac.aggregation import AggregationController
from proxy.authorization.rbac.escalation import check_escalation
from proxy.authorization.rbac.informer import RBACInformer
from proxy.authorization.rbac.policy_rule import RBAC_GROUP
from proxy.authorization.rbac.reconcile import BootstrapPolicy, RBACPolicy
from proxy.authorization.rbac.rule_resolver import RBACAuthorizer, RuleResolver
from proxy.registry.storage_factory import ResourceStorage
from proxy.request.user import request_user
from proxy.server.certs import new_rsa_key_pem
from proxy.server.settings import ConfigError, Settings
from storage import errors as serr
from storage.interfaces import GetOptions

__all__ = ["AUTH", "Auth", "auth_cleanup_ctx", "build_auth"]

log = logging.getLogger("watchcache.authentication")


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
    bootstrap: BootstrapPolicy | None = None
    # set by auth_cleanup_ctx at start-up: the service-account authenticator's object
    # lookups (from the watch cache), reached through this box from build_auth's closure
    getter_box: list[ObjectGetter] = field(default_factory=list)

    def rbac_ready(self) -> bool:
        """True once the bootstrap policy is stored and the informer has seen it (so a
        ready server answers /healthz anonymously and system:masters by its binding)."""
        if self.informer is None:
            return True
        if self.bootstrap is None or not self.bootstrap.ready.is_set():
            return False
        seen = self.informer.cluster_bindings
        return self.informer.synced.is_set() and all(
            b["metadata"]["name"] in seen for b in self.bootstrap.policy.cluster_role_bindings
        )

    def admit_rbac_write(
        self,
        request: web.Request,
        group: str,
        plural: str,
        namespace: str,
        name: str,
        obj: dict[str, Any],
    ) -> None:
        """403 when a Role/ClusterRole/(Cluster)RoleBinding write on the secure port would
        grant more than its writer holds (``proxy.authorization.rbac.escalation``)."""
        if group != RBAC_GROUP or self.informer is None or not is_secure(request):
            return
        user = request_user(request)
        if user is not None:
            resolver = RuleResolver(self.informer)
            check_escalation(self.authorizer, resolver, user, plural, namespace, name, obj)

    def authentication_filters(self) -> list[Middleware]:
        """Authentication, then impersonation (before flow control, as upstream)."""
        return [
            authentication_middleware(self.authenticator, self.audiences),
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


def build_auth(settings: Settings, informer: RBACInformer | None) -> Auth:
    """Everything but the storage-backed parts (see ``install_auth``)."""
    issuers = settings.service_account_issuer or (DEFAULT_ISSUER,)
    audiences = settings.api_audiences or issuers
    signing_path = _signing_key(settings)
    try:
        generator = TokenGenerator(issuers[0], load_private_key(signing_path))
        key_files = settings.service_account_key_file or (signing_path,)
        public_keys = load_public_keys(key_files)
    except (OSError, ValueError) as e:
        raise ConfigError(f"service account keys: {e}") from None
    getter_box: list[ObjectGetter] = []

    async def lookup(plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        return await getter_box[0](plural, namespace, name) if getter_box else None

    token_authenticators: list[TokenAuthenticator] = []
    if settings.token_auth_file:
        try:
            token_authenticators.append(TokenFile.from_path(settings.token_auth_file))
        except TokenFileError as e:
            raise ConfigError(str(e)) from None
    token_authenticators.append(
        ServiceAccountTokens(
            issuers, public_keys, audiences, lookup if settings.service_account_lookup else None
        )
    )
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
        getter_box=getter_box,
    )


def auth_cleanup_ctx(
    auth: Auth, storage_for: Callable[[str], ResourceStorage], policy: RBACPolicy
) -> Callable[[web.Application], AsyncIterator[None]]:
    """A cleanup context that, for the app's lifetime, runs the RBAC informer, the
    ClusterRole aggregation controller and the reconciler of the bootstrap ``policy``
    (``auth.bootstrap``, whose ``ready`` the readyz check reads), and gives the
    service-account authenticator its object lookups (from the watch cache:
    resourceVersion 0)."""

    async def get(plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        rs = storage_for(plural)
        try:
            stored = await rs.store.get(rs.object_key(namespace, name), GetOptions("0"))
        except serr.NotFound:
            return None
        return stored.obj

    async def run(app: web.Application) -> AsyncIterator[None]:
        auth.getter_box[:] = [get]
        tasks: list[asyncio.Task[None]] = []
        if auth.informer is not None:
            informer = auth.informer
            auth.bootstrap = BootstrapPolicy(
                storage_for("clusterroles"), storage_for("clusterrolebindings"), policy
            )
            aggregation = AggregationController(informer, storage_for("clusterroles"))
            tasks += [
                asyncio.create_task(informer.run(), name="rbac-informer"),
                asyncio.create_task(aggregation.run(), name="rbac-aggregation"),
                asyncio.create_task(auth.bootstrap.run(), name="rbac-bootstrap"),
            ]
        yield
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    return run
