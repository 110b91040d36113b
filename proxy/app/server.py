"""``watchcache serve``: the aiohttp application and its lifecycle.

    watchcache serve --etcd-servers=URLS [--etcd-prefix=/registry] [--bind-address=127.0.0.1]
                     [--port=8080] [--watch-cache=false] [--config=FILE]
                     [--etcd-cafile= --etcd-certfile= --etcd-keyfile=]
                     [--etcd-request-timeout=10s] ...

Starts even when etcd is unreachable (readyz then fails, requests fail with 503/504
within ``--etcd-request-timeout``) and recovers by itself when etcd returns. Prints
``serving on http://HOST:PORT`` once listening. On SIGINT/SIGTERM: readyz turns
failed, open watches are ended, in-flight requests get ``--shutdown-timeout`` to finish,
remaining tasks are cancelled, the storages and the etcd connections are closed.

The composition root (upstream's ``cmd/kube-apiserver/app``): the only module that
knows the generic server library, kube's kinds (``proxy.kube``, wired by
``proxy.app.kinds``), the apiextensions server and the aggregator at once.

Every request passes the handler chain of ``proxy.server.filters`` (panic recovery,
request info, metrics, timeout, max in flight, handler errors: kube-apiserver's
``DefaultBuildHandlerChain``) before its route.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from aiohttp import web

from proxy.aggregator.server import Aggregator
from proxy.apiextensions.apiserver import setup_apiextensions
from proxy.app import admission
from proxy.app.kinds import (
    admission_plugins,
    deletion_rules,
    kind_rules,
    register_kinds,
    served_resources,
)
from proxy.app.kubelet_client import kubelet_client_config
from proxy.app.leader_election import add_leader_election, worker_elector
from proxy.app.sites import is_loopback, start_private_site, start_site
from proxy.audit.server import Audit
from proxy.authentication.loopback import LoopbackToken
from proxy.authorization.rbac.informer import RBACInformer
from proxy.egressselector import load_egress_selector
from proxy.endpoints import responsewriter, responsewriters, yaml_worker
from proxy.endpoints.compression import COMPRESSION_ENABLED
from proxy.endpoints.context import API_CONTEXT, APIContext
from proxy.endpoints.discovery.aggregation import AGGREGATION
from proxy.endpoints.discovery.legacy import setup_discovery_routes
from proxy.endpoints.filters.authentication import answer_unauthorized, plain_port_authentication
from proxy.endpoints.handlers.rest import handle_resource
from proxy.endpoints.metrics import setup_metrics_routes
from proxy.flowcontrol.server import FlowControl
from proxy.kube import eviction
from proxy.kube.auth_routes import AuthStorages
from proxy.kube.bootstrap import controllers as bootstrap_controllers
from proxy.kube.bootstrap.rbac_policy import bootstrap_policy
from proxy.kube.bootstrap.system_namespaces import (
    SYSTEM_NAMESPACES_HOOK,
    ensure_system_namespaces,
)
from proxy.kube.componentstatus import ComponentStatuses
from proxy.kube.conversion import VIEWS
from proxy.kube.defaulting import default_object
from proxy.kube.legacy_binding import LegacyBindings
from proxy.kube.namespace import controller as namespace_controller
from proxy.kube.service import service_stores
from proxy.kube.strategy import KubeStrategyDeps, strategy_for
from proxy.kube.subresources import subresource_storages
from proxy.kube.token import ObjectReader
from proxy.loopback.client import LoopbackClient
from proxy.loopback.config import LoopbackConfig, loopback_host, pinned_tls_context
from proxy.options.settings import ConfigError, Settings, load_settings
from proxy.registry.conversion import VersionedStorage
from proxy.registry.informers import storage_informers
from proxy.registry.resources import Registry
from proxy.registry.storage_factory import ResourceStorage, StorageContext, StorageMap
from proxy.registry.store import Store
from proxy.server import event_loop, gc_pauses, http_errors
from proxy.server.auth_chain import AUTH, Auth, add_auth_hooks, build_auth, storage_lookup
from proxy.server.debug import setup_debug_routes
from proxy.server.filters import handler_chain
from proxy.server.healthz import setup_health_routes
from proxy.server.loop_lag import loop_lag_context
from proxy.server.openid_metadata import setup_oidc_routes
from proxy.server.port_in_use import EXIT_PORT_IN_USE, PortInUse
from proxy.server.post_start_hooks import POST_START_HOOKS, PostStartHookContext, PostStartHooks
from proxy.server.secure_serving import server_ssl_context, serving_cert_paths
from proxy.server.worker import (
    INSTANCE_HEADER,
    INSTANCE_ID_ENV,
    WORKER_HEADER,
    worker_identity,
)
from storage.interfaces import GetOptions, JSONObject, ListOptions

__all__ = [
    "EXIT_PORT_IN_USE",
    "INSTANCE_HEADER",
    "INSTANCE_ID_ENV",
    "LOOPBACK_TOKEN",
    "POST_START_HOOKS",
    "PortInUse",
    "build_app",
    "main",
    "serve",
    "version_info",
]

log = logging.getLogger("watchcache.proxy")

KUBERNETES_MAJOR, KUBERNETES_MINOR = "1", "37"



# the loopback client's token and the post-start hooks, which ``serve`` starts once it
# listens (a test that runs the app itself starts them with ``start_post_start_hooks``)
LOOPBACK_TOKEN = web.AppKey("watchcache_loopback_token", LoopbackToken)


def version_info() -> dict[str, str]:
    """The /version document (the Kubernetes API version this server mirrors)."""
    py = sys.version_info
    return {
        "major": KUBERNETES_MAJOR,
        "minor": KUBERNETES_MINOR,
        "gitVersion": f"v{KUBERNETES_MAJOR}.{KUBERNETES_MINOR}.0+watchcache",
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": f"python{py.major}.{py.minor}.{py.micro}",
        "compiler": "cpython",
        "platform": f"{sys.platform}/amd64",
    }


async def _version(request: web.Request) -> web.Response:
    return responsewriters.json_response(version_info())


def _stop_gc_timing(stop: Callable[[], None]) -> Callable[[web.Application], Awaitable[None]]:
    async def cleanup(app: web.Application) -> None:
        stop()

    return cleanup


async def _stop_yaml_worker(app: web.Application) -> None:
    await yaml_worker.close()  # the child that writes large YAML lists, if it started


def build_app(
    settings: Settings, storage_ctx: StorageContext, registry: Registry | None = None
) -> web.Application:
    """The application: health, version, discovery and resource routes over ``storage_ctx``;
    with a secure port, authentication and authorization (``proxy.server.auth_chain``)
    in front of them and the review, TokenRequest and OIDC routes."""
    register_kinds()
    secure = settings.secure_port is not None
    auth: Auth | None = None
    informer: RBACInformer | None = None
    storages = StorageMap(storage_ctx)
    loopback = LoopbackToken()
    hooks = PostStartHooks()
    instance = os.environ.get(INSTANCE_ID_ENV) or uuid.uuid4().hex
    worker = worker_identity()
    hooks.elector = worker_elector(settings, worker, instance)
    registry = registry or served_resources(secure)
    # one informer per resource, shared by every controller; started with the storages
    informers = storage_informers(registry, storages)
    if secure:
        if "RBAC" in settings.authorization_mode:
            informer = RBACInformer(informers)
        lookup = storage_lookup(lambda plural: _rbac_storage(registry, storages, plural))
        auth = build_auth(settings, informer, loopback, lookup)
    # API aggregation (proxy/aggregator): APIServices, the proxy, merged discovery
    aggregator = Aggregator(settings, registry, storages, informers)
    flow_control = FlowControl.build(settings)
    audit = Audit.build(settings)
    app = web.Application(
        middlewares=handler_chain(
            settings,
            authentication=(
                auth.authentication_filters(
                    audit.failed_authentication() if audit else answer_unauthorized
                )
                if auth
                else [plain_port_authentication(loopback)]
            ),
            authorization=auth.authorization_filters() if auth else (),
            aggregation=[aggregator.middleware()],
            flowcontrol=flow_control.middleware() if flow_control else None,
            audit=audit.middleware() if audit else None,
        ),
        # bodies are read by the handlers with their own limit (413 as a Status)
        client_max_size=settings.max_request_body_bytes + 1,
    )
    responsewriter.install(app)
    app[COMPRESSION_ENABLED] = settings.feature_gates.get("APIResponseCompression", True)
    kube_deps = KubeStrategyDeps(
        kind_rules=kind_rules(),
        escalation=auth.check_escalation if auth is not None else None,
        defaulter=default_object,
        deletion_rules=deletion_rules(),
    )
    # the cluster network (pod IPs and kubelets): the egress selector's
    cluster = load_egress_selector(settings.egress_selector_config_file).cluster_transport()
    ctx = APIContext(
        settings=settings,
        registry=registry,
        strategies=lambda resource, sub: strategy_for(resource, sub, kube_deps),
        subresource_storages=eviction.with_eviction(
            subresource_storages(
                lambda plural, namespace, name: _object_reader(ctx)(plural, namespace, name),
                kubelet_client_config(settings, cluster),
                lambda namespace: _endpoint_slices(ctx, namespace),
                cluster,
            ),
            lambda group, plural, sub: _store_of(ctx, group, plural, sub),
        ),
        storage_ctx=storage_ctx,
        storages=storages,
        informers=informers,
        authorizer=auth.authorizer if auth is not None else None,
        defaulter=default_object,
        cluster_transport=cluster,
    )
    ctx.custom_stores = service_stores(
        ctx, settings.service_cluster_ip_range, settings.service_node_port_range
    )
    ctx.delegates.append(LegacyBindings(ctx))
    statuses = ComponentStatuses(lambda: ctx.storage_ctx.etcd3().current_resource_version())
    ctx.computed_objects[("", "componentstatuses")] = statuses.list
    app[API_CONTEXT] = ctx
    app[LOOPBACK_TOKEN] = loopback
    app[POST_START_HOOKS] = hooks
    worker_name = str(worker.index) if worker is not None else ""

    async def name_instance(request: web.Request, response: web.StreamResponse) -> None:
        response.headers[INSTANCE_HEADER] = instance
        if worker_name:
            response.headers[WORKER_HEADER] = worker_name

    app.on_response_prepare.append(name_instance)
    if auth is not None:
        app[AUTH] = auth
        ctx.delegates.append(AuthStorages(ctx, auth, _object_reader(ctx)))
        setup_oidc_routes(app)
        add_auth_hooks(auth, bootstrap_policy(), hooks)
    if audit is not None:
        audit.install(app)
    if flow_control is not None:
        flow_control.install(
            app, lambda group, plural: _storage_of(ctx, group, plural), hooks, informers
        )
    setup_health_routes(app)
    setup_metrics_routes(app, worker=worker_name)
    setup_debug_routes(app)
    app.router.add_get("/version", _version)
    app.router.add_get("/version/", _version)
    setup_discovery_routes(app)
    app.router.add_route("*", "/api/{tail:.+}", handle_resource)
    app.router.add_route("*", "/apis/{tail:.+}", handle_resource)

    app.cleanup_ctx.append(loop_lag_context())
    app.on_cleanup.append(_stop_gc_timing(gc_pauses.install()))
    app.on_cleanup.append(_stop_yaml_worker)
    app.cleanup_ctx.append(_storages_and_compactor(ctx))
    setup_apiextensions(app, ctx, hooks)
    app[AGGREGATION] = ctx.aggregator = aggregator
    app.cleanup_ctx.append(aggregator.cleanup_ctx())
    aggregator.add_post_start_hooks(hooks)
    # the chain, its Warning headers, its configurations, its hooks
    admission.install(app, ctx, admission_plugins(), hooks)
    if not settings.lifecycle_controllers:  # else a controller manager empties them
        namespace_controller.add_hook(hooks, ctx)
    if settings.system_namespaces:
        hooks.add(SYSTEM_NAMESPACES_HOOK, ensure_system_namespaces)
        bootstrap_controllers.add_hooks(hooks, ctx)
    if hooks.elector is not None:
        add_leader_election(hooks, hooks.elector, settings)

    async def on_shutdown(app: web.Application) -> None:
        await hooks.stop()  # no internal write outlives the listeners
        await ctx.stop_watches()

    async def on_cleanup(app: web.Application) -> None:
        await ctx.storages.close()
        await storage_ctx.close()

    app.on_response_prepare.append(http_errors.on_response_prepare)
    app.on_response_prepare.append(responsewriter.writable_headers)  # the last hook
    app.on_shutdown.append(on_shutdown)
    app.on_cleanup.append(on_cleanup)
    return app


def _object_reader(ctx: APIContext) -> ObjectReader:
    """Reads of core objects for TokenRequest (the service account, a bound pod or
    secret), from etcd through their stores (404 Status when absent)."""

    async def read(plural: str, namespace: str, name: str) -> JSONObject:
        resource = ctx.registry.lookup("", plural)
        assert resource is not None, plural
        return (await ctx.store(resource).get(namespace, name, GetOptions())).obj

    return read


async def _endpoint_slices(ctx: APIContext, namespace: str) -> list[JSONObject]:
    """A namespace's EndpointSlices from the watch cache (services/proxy)."""
    resource = ctx.registry.lookup("discovery.k8s.io", "endpointslices")
    assert resource is not None
    rs = ctx.storages.for_resource(resource)
    listed = await rs.store.get_list(rs.list_key(namespace), ListOptions(resource_version="0"))
    return [item.obj for item in listed.items]


def _storage_of(ctx: APIContext, group: str, plural: str) -> ResourceStorage | None:
    resource = ctx.registry.lookup(group, plural)
    return ctx.storages.for_resource(resource) if resource is not None else None


def _store_of(ctx: APIContext, group: str, plural: str, subresource: str) -> Store | None:
    """The generic store of a served resource, as ``subresource`` writes it."""
    resource = ctx.registry.lookup(group, plural)
    return ctx.store(resource, subresource) if resource is not None else None


def _rbac_storage(registry: Registry, storages: StorageMap, plural: str) -> ResourceStorage:
    group = "" if plural in ("serviceaccounts", "pods", "secrets") else "rbac.authorization.k8s.io"
    resource = registry.lookup(group, plural)
    assert resource is not None, plural
    return storages.for_resource(resource)


def _storages_and_compactor(
    ctx: APIContext,
) -> Callable[[web.Application], AsyncIterator[None]]:
    """A cleanup context that, at start-up, builds every served resource's storage (so
    every watch cache primes at once, as kube-apiserver creates its cachers), starts
    the storage context (the etcd client's one compactor, ``--etcd-compaction-interval``,
    whether or not the watch cache is on; the storage context stops it at close) and
    then the shared informers over those storages (stopped when the app closes)."""

    async def run(app: web.Application) -> AsyncIterator[None]:
        ctx.storage_ctx.start()
        _serve_conversion_views(ctx)
        ctx.storages.build_all(r for r in ctx.registry if r.has_storage)
        ctx.informers.start()
        yield
        await ctx.informers.shutdown()

    return run


def _serve_conversion_views(ctx: APIContext) -> None:
    """The built-in kinds served in a version other than their storage's
    (``autoscaling/v1``, ``events.k8s.io/v1``): each a converting view over the stored
    version's storage and watch cache."""
    for served, (stored, converter) in VIEWS.items():
        view, base = ctx.registry.get(*served), ctx.registry.get(*stored)
        if view is None or base is None:
            continue
        inner = ctx.storages.for_resource(base).store
        versioned = VersionedStorage(inner, view.api_version, base.api_version, converter)
        ctx.storages.add_view(view, versioned)


def _new_client(settings: Settings) -> object:
    from etcdclient import EtcdClient

    return EtcdClient(
        list(settings.etcd_servers),
        ca_file=settings.etcd_cafile or None,
        cert_file=settings.etcd_certfile or None,
        key_file=settings.etcd_keyfile or None,
        dial_timeout=settings.etcd_dial_timeout,
        request_timeout=settings.etcd_request_timeout,
    )


async def serve(settings: Settings, stop: asyncio.Event | None = None) -> int:
    """Run until ``stop`` is set or SIGINT/SIGTERM arrives; returns the exit code."""
    from etcdclient import EtcdClient
    from etcdclient import Unavailable as EtcdUnavailable

    client = _new_client(settings)
    assert isinstance(client, EtcdClient)
    try:
        await client.connect()
    except EtcdUnavailable as e:
        # keep going: readyz reports etcd, requests fail fast, and the client reconnects
        log.warning("etcd is not reachable yet: %s", e)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    storage_ctx = StorageContext(settings=settings, client=client)
    loopback: LoopbackClient | None = None
    try:
        ssl_context = server_ssl_context(settings) if settings.secure_port is not None else None
        app = build_app(settings, storage_ctx)
    except ConfigError:
        await client.close()
        raise
    runner = web.AppRunner(
        app,
        handler_cancellation=True,  # a client that goes away cancels its handler (watches)
        shutdown_timeout=settings.shutdown_timeout,
        access_log=None,
        **http_errors.protocol_options(),
    )
    worker = worker_identity()
    orphaned: asyncio.Task[None] | None = None
    try:
        await runner.setup()
        # the plain port first: scripts that wait for the first "serving on" line and
        # talk plain HTTP keep working when a secure port is added
        secure_bound = plain_bound = None
        reuse = worker is not None  # every worker listens on the same ports
        if settings.port is not None:
            plain_address = settings.insecure_bind_address or settings.bind_address
            plain_bound = await start_site(
                runner, plain_address, settings, settings.port, None, reuse_port=reuse
            )
            if not is_loopback(plain_address):
                log.warning(
                    "the plain port %d on %s is reachable from the network and serves every "
                    "request as system:masters; serve --secure-port instead",
                    settings.port, plain_address,
                )  # fmt: skip
        if settings.secure_port is not None:
            secure_bound = await start_site(
                runner, settings.bind_address, settings, settings.secure_port, ssl_context,
                reuse_port=reuse,
            )  # fmt: skip
        to_self = (secure_bound, plain_bound)  # where the loopback client dials
        if worker is not None:
            # the worker's own port: its loopback client talks to this very process (a
            # token another worker does not know), and tests reach one worker by it
            private = await start_private_site(runner, settings, worker, ssl_context)
            to_self = (private, None) if ssl_context else (None, private)
            orphaned = asyncio.get_running_loop().create_task(_stop_when_orphaned(stop))
        loopback = start_post_start_hooks(
            app,
            loopback_config(settings, app[LOOPBACK_TOKEN], *to_self),
            secure_bound or plain_bound,  # the port the kubernetes Service targets
        )
        await stop.wait()
        log.info("shutting down")
        app[API_CONTEXT].shutting_down = True
        if app[POST_START_HOOKS].elector is not None:
            # hand the Lease over while the listeners still take the release's write
            await app[POST_START_HOOKS].stop()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        if orphaned is not None:
            orphaned.cancel()
        await runner.cleanup()  # stops the hooks (on_shutdown) before the storages
        if loopback is not None:
            await loopback.close()
        await client.close()
    return 0


async def _stop_when_orphaned(stop: asyncio.Event) -> None:
    """Set ``stop`` when stdin ends: a worker's stdin is a pipe from its supervisor, so
    the supervisor's death (even SIGKILL) ends the worker, never an orphan."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while await reader.read(4096):
        pass
    log.warning("the supervisor is gone (stdin closed): shutting down")
    stop.set()


def loopback_config(
    settings: Settings, token: LoopbackToken, secure_port: int | None, plain_port: int | None
) -> LoopbackConfig:
    """The loopback client's target: this server's secure port, pinned to its serving
    certificate, or its plain port when it serves no other (``proxy.loopback.config``)."""
    timeout = settings.request_timeout + 5.0  # the server ends a request first
    if secure_port is not None:
        host = loopback_host(settings.bind_address)
        cert, _ = serving_cert_paths(settings)
        return LoopbackConfig(f"https://{host}:{secure_port}", token.token,
                              pinned_tls_context(cert), timeout=timeout)  # fmt: skip
    assert plain_port is not None, "a server listens on at least one port"
    host = loopback_host(settings.insecure_bind_address or settings.bind_address)
    return LoopbackConfig(f"http://{host}:{plain_port}", token.token, timeout=timeout)


def start_post_start_hooks(
    app: web.Application, config: LoopbackConfig, serving_port: int | None
) -> LoopbackClient:
    """Start the app's post-start hooks once it listens on ``serving_port`` (the port
    the kubernetes Service targets), with a loopback client for ``config``; the hooks
    stop at the app's shutdown, the caller closes the client."""
    app[API_CONTEXT].serving_port = serving_port
    client = LoopbackClient(config)
    app[POST_START_HOOKS].start(PostStartHookContext(client))
    return client


def main(argv: Sequence[str]) -> int:
    try:
        settings = load_settings(argv)
    except ConfigError as e:
        print(f"watchcache serve: {e}", file=sys.stderr)
        return 2
    worker = worker_identity()
    logging.basicConfig(
        level=getattr(logging, settings.log_level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s "
        + (f"[worker {worker.index}] " if worker else "")
        + "%(name)s: %(message)s",
        stream=sys.stderr,
    )
    with contextlib.suppress(KeyboardInterrupt):
        try:
            return event_loop.run(serve(settings), settings.event_loop)
        except ConfigError as e:
            print(f"watchcache serve: {e}", file=sys.stderr)
            return 2
        except PortInUse as e:
            print(f"watchcache serve: {e.strerror}", file=sys.stderr)
            return EXIT_PORT_IN_USE
    return 0
