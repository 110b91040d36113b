"""The extension API server of ``metrics.k8s.io/v1beta1`` (see the package
docstring), run as its own process:

    python -m lab.extension.server --source=http://127.0.0.1:8080 --port=N \\
        --tls-cert-file=F --tls-private-key-file=F \\
        --requestheader-client-ca-file=F [--requestheader-allowed-names=front-proxy-client]

As a real aggregated API server it

- serves HTTPS only and trusts a request's identity only from the front proxy: the
  client certificate must be signed by ``--requestheader-client-ca-file`` (with an
  allowed CN); the user is read from ``X-Remote-User``/``X-Remote-Group``/
  ``X-Remote-Extra-*`` (``proxy.authentication.request_header``, the same authenticator
  watchcache uses). Anything else is 401.
- asks watchcache whether the user may do it (a SubjectAccessReview: delegated
  authorization); no is 403 with the API's Status.
- names, in ``X-Extension-Seen-User``/``-Groups`` response headers, the user it saw
  (a teaching aid: the identity travelled in the front proxy's headers);
- serves discovery (``/apis`` legacy and aggregated, the group, the resource list),
  OpenAPI v3 (``lab.extension.openapi``),
  list and get of ``pods`` (PodMetrics, namespaced) and ``nodes`` (NodeMetrics), as
  metrics-server does, so ``kubectl top pods`` and ``kubectl top nodes`` work; Tables for
  ``kubectl get podmetrics``, and watch of PodMetrics (the source's pod watch, turned
  into PodMetrics events: more than metrics-server, for ``kubectl get podmetrics -w``).

Data: the pods and nodes are read from ``--source`` at ``resourceVersion=0`` — served by
watchcache's watch cache — on each request; nothing is stored here.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import logging
import ssl
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from lab.extension import metrics, openapi
from proxy.authentication.authenticator import AuthenticationError
from proxy.authentication.request_header import RequestHeaderAuthenticator, RequestHeaderConfig
from proxy.request.user import UserInfo

__all__ = ["build_app", "main"]

log = logging.getLogger("watchcache.lab.extension")

JSON = dict[str, Any]
SESSION = web.AppKey("source_session", aiohttp.ClientSession)
USER = web.RequestKey("extension_user", UserInfo)
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
# every answer says which user the extension server saw (from the front proxy's headers)
USER_HEADER, GROUPS_HEADER = "X-Extension-Seen-User", "X-Extension-Seen-Groups"
PREFIX = f"/apis/{metrics.GROUP}/{metrics.VERSION}"


def _status(code: int, reason: str, message: str, details: JSON | None = None) -> web.Response:
    body: JSON = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                  "message": message, "reason": reason, "code": code}  # fmt: skip
    if details:
        body["details"] = details
    return web.json_response(body, status=code)


def _not_found(plural: str, name: str) -> web.Response:
    return _status(404, "NotFound", f'{plural}.{metrics.GROUP} "{name}" not found',
                   {"name": name, "group": metrics.GROUP, "kind": plural})  # fmt: skip


# ---------------------------------------------------------------------- discovery


def _resource_list() -> JSON:
    resources = [
        {"name": plural, "singularName": kind.lower(), "namespaced": namespaced, "kind": kind,
         "verbs": ["get", "list", "watch"] if plural == "pods" else ["get", "list"],
         "shortNames": list(short)}
        for plural, (kind, namespaced, short) in metrics.RESOURCES.items()
    ]  # fmt: skip
    group_version = f"{metrics.GROUP}/{metrics.VERSION}"
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
            "resources": resources}  # fmt: skip


def _group() -> JSON:
    version = {"groupVersion": f"{metrics.GROUP}/{metrics.VERSION}", "version": metrics.VERSION}
    return {"name": metrics.GROUP, "versions": [version], "preferredVersion": version}


def _aggregated() -> JSON:
    resources = [
        {"resource": r["name"], "responseKind": {"group": metrics.GROUP, "version":
         metrics.VERSION, "kind": r["kind"]}, "scope": "Namespaced" if r["namespaced"] else
         "Cluster", "singularResource": r["singularName"], "verbs": r["verbs"],
         "shortNames": r["shortNames"]}
        for r in _resource_list()["resources"]
    ]  # fmt: skip
    item = {"metadata": {"name": metrics.GROUP, "creationTimestamp": None},
            "versions": [{"version": metrics.VERSION, "resources": resources,
                          "freshness": "Current"}]}  # fmt: skip
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {}, "items": [item]}  # fmt: skip


async def _apis(request: web.Request) -> web.StreamResponse:
    if "as=APIGroupDiscoveryList" in request.headers.get("Accept", ""):
        return web.Response(body=json.dumps(_aggregated()), headers={"Content-Type": AGGREGATED})
    return web.json_response({"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group()]})


async def _api_group(request: web.Request) -> web.StreamResponse:
    return web.json_response({"kind": "APIGroup", "apiVersion": "v1", **_group()})


async def _api_resources(request: web.Request) -> web.StreamResponse:
    return web.json_response(_resource_list())


# ---------------------------------------------------------------------- resources


async def _source_get(request: web.Request, path: str, **query: str) -> tuple[int, JSON]:
    session = request.app[SESSION]
    async with session.get(path, params={"resourceVersion": "0", **query}) as resp:
        return resp.status, await resp.json(content_type=None)


def _answer(request: web.Request, obj: JSON, items: list[JSON] | None = None) -> web.Response:
    if "as=Table" in request.headers.get("Accept", ""):
        return web.json_response(metrics.table(items if items is not None else [obj]))
    return web.json_response(obj)


async def _pods(request: web.Request) -> web.StreamResponse:
    ns = request.match_info.get("namespace", "")
    name = request.match_info.get("name", "")
    now = dt.datetime.now(dt.UTC)
    base = f"/api/v1/namespaces/{ns}/pods" if ns else "/api/v1/pods"
    if name:
        code, pod = await _source_get(request, f"{base}/{name}")
        if code == 404 or not metrics.is_running(pod):
            return _not_found("podmetrics", f"{ns}/{name}")  # metrics-server's name
        return _answer(request, metrics.pod_metrics(pod, now))
    if request.query.get("watch") in ("true", "1"):
        return await _watch_pods(request, base)
    selector = request.query.get("labelSelector", "")
    _, listed = await _source_get(request, base, labelSelector=selector)
    items = [
        metrics.pod_metrics(p, now) for p in listed.get("items") or [] if metrics.is_running(p)
    ]
    body = {"kind": "PodMetricsList", "apiVersion": metrics.API_VERSION,
            "metadata": {"resourceVersion": ""}, "items": items}  # fmt: skip
    return _answer(request, body, items)


async def _nodes(request: web.Request) -> web.StreamResponse:
    name = request.match_info.get("name", "")
    now = dt.datetime.now(dt.UTC)
    _, pods = await _source_get(request, "/api/v1/pods")
    if name:
        code, _ = await _source_get(request, f"/api/v1/nodes/{name}")
        if code == 404:
            return _not_found("nodemetrics", name)
        return _answer(request, metrics.node_metrics(name, pods.get("items") or [], now))
    _, nodes = await _source_get(request, "/api/v1/nodes")
    items = [metrics.node_metrics(n["metadata"]["name"], pods.get("items") or [], now)
             for n in nodes.get("items") or []]  # fmt: skip
    body = {"kind": "NodeMetricsList", "apiVersion": metrics.API_VERSION,
            "metadata": {"resourceVersion": ""}, "items": items}  # fmt: skip
    return _answer(request, body, items)


async def _watch_pods(request: web.Request, base: str) -> web.StreamResponse:
    """The source's pod watch, each running pod's event turned into its PodMetrics."""
    params = {"watch": "true", "resourceVersion": request.query.get("resourceVersion", "0")}
    if request.query.get("labelSelector"):
        params["labelSelector"] = request.query["labelSelector"]
    table = "as=Table" in request.headers.get("Accept", "")  # kubectl get -w: Table events
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    async with request.app[SESSION].get(base, params=params, timeout=None) as upstream:
        await response.prepare(request)
        async for line in upstream.content:
            event = json.loads(line)
            pod = event.get("object") or {}
            if event.get("type") not in ("ADDED", "MODIFIED", "DELETED") or not metrics.is_running(
                pod
            ):
                continue
            obj = metrics.pod_metrics(pod, dt.datetime.now(dt.UTC))
            out = {"type": event["type"], "object": metrics.table([obj]) if table else obj}
            await response.write(json.dumps(out).encode() + b"\n")
    await response.write_eof()
    return response


# ---------------------------------------------------------------------- auth


def _authentication(authenticator: RequestHeaderAuthenticator) -> Middleware:
    @web.middleware
    async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in ("/healthz", "/readyz", "/livez"):
            return await handler(request)
        try:
            response = await authenticator.authenticate(request)
        except AuthenticationError as e:
            log.info("front proxy rejected: %s", e)
            response = None
        if response is None:
            return _status(401, "Unauthorized", "Unauthorized")
        request[USER] = response.user
        return await handler(request)

    return authenticate


def _attributes(request: web.Request) -> JSON:
    parts = (
        request.path[len(PREFIX) :].strip("/").split("/") if request.path.startswith(PREFIX) else []
    )
    if len(parts) >= 2 and parts[0] == "namespaces":
        namespace, rest = parts[1], parts[2:]
    else:
        namespace, rest = "", parts
    if not rest or not rest[0]:
        return {"nonResourceAttributes": {"path": request.path, "verb": "get"}}
    verb = "get" if len(rest) > 1 else ("watch" if request.query.get("watch") else "list")
    attrs = {"namespace": namespace, "verb": verb, "group": metrics.GROUP,
             "version": metrics.VERSION, "resource": rest[0]}  # fmt: skip
    if len(rest) > 1:
        attrs["name"] = rest[1]
    return {"resourceAttributes": attrs}


@web.middleware
async def _authorization(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Delegated authorization: a SubjectAccessReview to watchcache for the user."""
    user = request.get(USER)
    if user is None:
        return await handler(request)
    review: JSON = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
              "spec": {"user": user.name, "groups": list(user.groups),
                       "extra": {k: list(v) for k, v in user.extra.items()},
                       **_attributes(request)}}  # fmt: skip
    if user.uid:
        review["spec"]["uid"] = user.uid
    async with request.app[SESSION].post(
        "/apis/authorization.k8s.io/v1/subjectaccessreviews", json=review
    ) as resp:
        answer = await resp.json(content_type=None)
    if not (answer.get("status") or {}).get("allowed"):
        attrs = review["spec"].get("resourceAttributes") or {}
        what = f"{attrs.get('resource')}.{metrics.GROUP}" if attrs else request.path
        return _status(403, "Forbidden",
                       f'{what} is forbidden: User "{user.name}" cannot {attrs.get("verb", "get")} '
                       f"resource {what!r}")  # fmt: skip
    return await handler(request)


async def _openapi_index(request: web.Request) -> web.StreamResponse:
    return web.Response(body=openapi.INDEX, content_type="application/json")


async def _openapi_document(request: web.Request) -> web.StreamResponse:
    return web.Response(body=openapi.DOCUMENT, content_type="application/json",
                        headers={"ETag": f'"{openapi.DOCUMENT_HASH}"'})  # fmt: skip


@web.middleware
async def _read_only(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every write is refused as an apiserver refuses a verb a resource lacks."""
    if request.method not in ("GET", "HEAD"):
        message = "the server does not allow this method on the requested resource"
        return _status(405, "MethodNotAllowed", message)
    return await handler(request)


async def _healthz(request: web.Request) -> web.StreamResponse:
    return web.Response(text="ok")


# ---------------------------------------------------------------------- app


def build_app(source_url: str, authenticator: RequestHeaderAuthenticator) -> web.Application:
    app = web.Application(middlewares=[_authentication(authenticator), _authorization, _read_only])

    async def source(app: web.Application) -> AsyncIterator[None]:
        app[SESSION] = aiohttp.ClientSession(base_url=source_url)
        yield
        await app[SESSION].close()

    app.cleanup_ctx.append(source)

    async def name_user(request: web.Request, response: web.StreamResponse) -> None:
        # a teaching aid: who the front proxy said the request is from
        user = request.get(USER)
        if user is not None:
            response.headers[USER_HEADER] = user.name
            response.headers[GROUPS_HEADER] = ",".join(user.groups)

    app.on_response_prepare.append(name_user)
    routes = [
        ("/healthz", _healthz), ("/readyz", _healthz), ("/livez", _healthz),
        ("/apis", _apis), (f"/apis/{metrics.GROUP}", _api_group), (PREFIX, _api_resources),
        (f"{PREFIX}/pods", _pods), (f"{PREFIX}/namespaces/{{namespace}}/pods", _pods),
        (f"{PREFIX}/namespaces/{{namespace}}/pods/{{name}}", _pods),
        (f"{PREFIX}/nodes", _nodes), (f"{PREFIX}/nodes/{{name}}", _nodes),
        ("/openapi/v3", _openapi_index), (f"/openapi/v3/{openapi.PATH}", _openapi_document),
    ]  # fmt: skip
    for path, handler in routes:
        app.router.add_get(path, handler)
    return app


def ssl_context(cert: str, key: str, front_proxy_ca: str) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    ctx.load_verify_locations(cafile=front_proxy_ca)
    ctx.verify_mode = ssl.CERT_OPTIONAL  # 401 (not a TLS failure) without a certificate
    return ctx


async def serve(a: argparse.Namespace) -> None:
    config = RequestHeaderConfig(
        client_ca_file=a.requestheader_client_ca_file,
        allowed_names=tuple(n for n in a.requestheader_allowed_names.split(",") if n),
        username_headers=("X-Remote-User",),
        uid_headers=("X-Remote-Uid",),
        group_headers=("X-Remote-Group",),
        extra_headers_prefix=("X-Remote-Extra-",),
    )
    app = build_app(a.source, RequestHeaderAuthenticator(config))
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
    await runner.setup()
    context = ssl_context(a.tls_cert_file, a.tls_private_key_file, a.requestheader_client_ca_file)
    site = web.TCPSite(runner, a.bind_address, a.port, ssl_context=context)
    await site.start()
    print(f"serving on https://{a.bind_address}:{a.port}", flush=True)
    try:
        await asyncio.Event().wait()  # until the launcher's SIGTERM
    finally:
        await runner.cleanup()


def main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.extension.server", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--source", required=True, help="watchcache URL the pods are read from")
    p.add_argument("--bind-address", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--tls-cert-file", required=True)
    p.add_argument("--tls-private-key-file", required=True)
    p.add_argument("--requestheader-client-ca-file", required=True)
    p.add_argument("--requestheader-allowed-names", default="")
    a = p.parse_args(list(argv))
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(a))
    return 0


if __name__ == "__main__":
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    raise SystemExit(main(sys.argv[1:]))
