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

The error middleware is the last line: any ``StatusError`` is rendered as its Status;
a storage error that escaped a handler is translated; anything unexpected is logged
with its traceback and answered 500 InternalError without one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from aiohttp import web

from proxy import apierrors
from proxy.endpoints import negotiation
from proxy.endpoints.discovery.legacy import setup_discovery_routes
from proxy.endpoints.handlers.collection import STREAMING
from proxy.endpoints.handlers.rest import handle_resource
from proxy.endpoints.metrics import metrics_middleware, setup_metrics_routes
from proxy.registry.resources import Registry, build_registry
from proxy.registry.storage_factory import StorageContext, StorageMap
from proxy.server.context import API_CONTEXT, APIContext
from proxy.server.healthz import setup_health_routes
from proxy.server.loop_lag import loop_lag_context
from proxy.server.settings import ConfigError, Settings, load_settings
from proxy.server.system_namespaces import SystemNamespaces
from storage import errors as serr

__all__ = ["build_app", "main", "serve", "version_info"]

log = logging.getLogger("watchcache.proxy")

KUBERNETES_MAJOR, KUBERNETES_MINOR = "1", "37"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


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


def _status_response(err: apierrors.StatusError) -> web.Response:
    return negotiation.json_response(err.body, err.code, headers=err.headers)


def _is_long_running(request: web.Request) -> bool:
    return request.query.get("watch", "") in ("1", "true", "True") or "/watch/" in request.path


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure becomes a Status; non-watch requests are bounded by --request-timeout."""
    ctx = request.app[API_CONTEXT]
    try:
        if _is_long_running(request):
            return await handler(request)
        async with asyncio.timeout(ctx.settings.request_timeout):
            return await handler(request)
    except apierrors.StatusError as e:
        return _status_response(e)
    except serr.StorageError as e:
        return _status_response(apierrors.from_storage_error(e, "", ""))
    except TimeoutError:
        if request.get(STREAMING) is not None:
            # headers and part of a LIST are out: cut the connection so the client sees
            # a truncated response, never a well-formed partial list
            log.warning("request timeout while streaming %s; closing", request.path)
            if request.transport is not None:
                request.transport.close()
            raise
        return _status_response(
            apierrors.timeout(
                "request did not complete within requested timeout - context deadline exceeded",
                retry_after=0,
            )
        )
    except web.HTTPException as e:
        if e.status == 404:
            return _status_response(
                apierrors.StatusError(
                    apierrors.status_body(
                        404, "NotFound", "the server could not find the requested resource", {}
                    )
                )
            )
        if e.status == 405:
            return _status_response(
                apierrors.StatusError(
                    apierrors.status_body(
                        405,
                        "MethodNotAllowed",
                        f"{request.method} is not allowed on {request.path}",
                    )
                )
            )
        raise
    except (asyncio.CancelledError, ConnectionResetError):
        raise
    except Exception as e:
        log.exception("unexpected error serving %s %s", request.method, request.path)
        return _status_response(apierrors.internal_error(f"unexpected {type(e).__name__}"))


async def _version(request: web.Request) -> web.Response:
    return negotiation.json_response(version_info())


def build_app(
    settings: Settings, storage_ctx: StorageContext, registry: Registry | None = None
) -> web.Application:
    """The application: health, version, discovery and resource routes over ``storage_ctx``."""
    app = web.Application(
        middlewares=[metrics_middleware, error_middleware],
        # bodies are read by the handlers with their own limit (413 as a Status)
        client_max_size=settings.max_request_body_bytes + 1,
    )
    ctx = APIContext(
        settings=settings,
        registry=registry or build_registry(),
        storage_ctx=storage_ctx,
        storages=StorageMap(storage_ctx),
    )
    app[API_CONTEXT] = ctx
    setup_health_routes(app)
    setup_metrics_routes(app)
    app.router.add_get("/version", _version)
    app.router.add_get("/version/", _version)
    setup_discovery_routes(app)
    app.router.add_route("*", "/api/{tail:.+}", handle_resource)
    app.router.add_route("*", "/apis/{tail:.+}", handle_resource)

    app.cleanup_ctx.append(loop_lag_context())
    app.cleanup_ctx.append(_storages_and_compactor(ctx))
    if settings.system_namespaces:
        app.cleanup_ctx.append(_system_namespaces_task(ctx))

    async def on_shutdown(app: web.Application) -> None:
        await ctx.stop_watches()

    async def on_cleanup(app: web.Application) -> None:
        await ctx.storages.close()
        await storage_ctx.close()

    app.on_shutdown.append(on_shutdown)
    app.on_cleanup.append(on_cleanup)
    return app


def _storages_and_compactor(
    ctx: APIContext,
) -> Callable[[web.Application], AsyncIterator[None]]:
    """A cleanup context that, at start-up, builds every served resource's storage (so
    every watch cache primes at once, as kube-apiserver creates its cachers) and holds
    the etcd client's compactor (``--etcd-compaction-interval``) whether or not the
    watch cache is on. The compactor registry keys on the client, so the cachers that
    also acquire it share this one: one compaction per interval either way."""

    async def run(app: web.Application) -> AsyncIterator[None]:
        from cacher.compactor import Compactor

        compactor = Compactor.acquire(
            ctx.storage_ctx.client,
            ctx.settings.etcd_compaction_interval,
        )
        ctx.storages.build_all(ctx.registry)
        yield
        if compactor is not None:
            await compactor.release()

    return run


def _system_namespaces_task(
    ctx: APIContext,
) -> Callable[[web.Application], AsyncIterator[None]]:
    """A cleanup context that runs ``SystemNamespaces`` for the app's lifetime."""

    async def run(app: web.Application) -> AsyncIterator[None]:
        creator = SystemNamespaces(ctx.registry, ctx.storages)
        ctx.system_namespaces_ready = creator.ready
        task = asyncio.create_task(creator.run(), name="system-namespaces")
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    return run


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
    app = build_app(settings, storage_ctx)
    runner = web.AppRunner(
        app,
        handler_cancellation=True,  # a client that goes away cancels its handler (watches)
        shutdown_timeout=settings.shutdown_timeout,
        access_log=None,
    )
    try:
        await runner.setup()
        site = web.TCPSite(runner, settings.bind_address, settings.port)
        await site.start()
        host, port = _bound_address(runner, settings)
        print(f"serving on http://{host}:{port}", flush=True)
        log.info(
            "serving on http://%s:%d (etcd %s, prefix %s)",
            host,
            port,
            ",".join(settings.etcd_servers),
            settings.etcd_prefix,
        )
        await stop.wait()
        log.info("shutting down")
        app[API_CONTEXT].shutting_down = True
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await runner.cleanup()
        await client.close()
    return 0


def _bound_address(runner: web.AppRunner, settings: Settings) -> tuple[str, int]:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return settings.bind_address, int(address[1])
    return settings.bind_address, settings.port


def main(argv: Sequence[str]) -> int:
    try:
        settings = load_settings(argv)
    except ConfigError as e:
        print(f"watchcache serve: {e}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=getattr(logging, settings.log_level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(serve(settings))
    return 0
