"""Answers measured on, or read from, kube-apiserver (k8s.io/apiserver, go-restful, Go's
net/http) for requests at the edges: each test states upstream's answer.

- POST to an object path / PUT to a collection: go-restful's 405, details {}.
- PATCH with a body of a type the route does not consume: go-restful's 415.
- ``/api/v1``'s APIResourceList carries no apiVersion.
- ``Content-Encoding`` on a request is ignored: the body is decoded as sent.
- ``metadata.resourceVersion`` on create: the etcd3 store's plain error (500, no reason)
  for a numeric one; one that does not parse is ignored.
- An object etcd refuses as too large: etcd's text, 500, no reason (kube passes it on).
- Malformed HTTP: a plain-text 400 from the protocol layer, logged at debug level.
"""

from __future__ import annotations

import asyncio
import gzip
import io
from typing import Any

import aiohttp
import orjson
import pytest

from tests.integration.conftest import ServerFactory, ServerProcess, create

pytestmark = pytest.mark.etcd

JSON = dict[str, Any]
CM = {"Content-Type": "application/json"}


def configmaps(ns: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{ns}/configmaps" + (f"/{name}" if name else "")


async def _answer(resp: aiohttp.ClientResponse) -> tuple[int, JSON]:
    body: JSON = await resp.json(content_type=None)
    return resp.status, body


@pytest.mark.parametrize(
    ("method", "suffix"),
    [("POST", "/cm"), ("PUT", ""), ("PUT", "/"), ("PATCH", "")],
)
async def test_a_method_no_route_serves_is_405(
    http: aiohttp.ClientSession, namespace: str, method: str, suffix: str
) -> None:
    headers = {
        "Content-Type": "application/merge-patch+json" if method == "PATCH" else CM["Content-Type"]
    }
    async with http.request(
        method, configmaps(namespace) + suffix, data=b"{}", headers=headers
    ) as resp:
        code, status = await _answer(resp)
    assert code == 405, status
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "the server does not allow this method on the requested resource",
        "reason": "MethodNotAllowed",
        "details": {},
        "code": 405,
    }


@pytest.mark.parametrize(
    ("method", "path"),
    [("DELETE", "/api/v1/pods"), ("POST", "/api/v1/namespaces/x/pods/p/status")],
)
async def test_methods_other_routes_serve_are_405(
    http: aiohttp.ClientSession, method: str, path: str
) -> None:
    """Only list and watch are served on /api/v1/pods; get/put/patch on .../status."""
    async with http.request(method, path) as resp:
        code, status = await _answer(resp)
    assert (code, status["reason"], status["details"]) == (405, "MethodNotAllowed", {})


async def test_patch_with_a_type_the_route_does_not_consume_is_go_restful_415(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    await create(http, configmaps(namespace), {"metadata": {"name": "p"}})
    async with http.patch(configmaps(namespace, "p"), data=b"{}", headers=CM) as resp:
        code, status = await _answer(resp)
    assert code == 415
    assert (status["message"], status["reason"], status["details"]) == (
        "415: Unsupported Media Type", "UnsupportedMediaType", {}
    )  # fmt: skip


async def test_a_body_type_the_decoder_refuses_has_no_details(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    headers = {"Content-Type": "text/plain"}
    async with http.post(configmaps(namespace), data=b"{}", headers=headers) as resp:
        code, status = await _answer(resp)
    assert code == 415 and "details" not in status


async def test_legacy_resource_list_has_no_api_version(http: aiohttp.ClientSession) -> None:
    async with http.get("/api/v1") as resp:
        legacy = await resp.json()
    assert "apiVersion" not in legacy
    assert (legacy["kind"], legacy["groupVersion"]) == ("APIResourceList", "v1")
    async with http.get("/apis/apps/v1") as resp:
        assert (await resp.json())["apiVersion"] == "v1"


@pytest.mark.parametrize("encoding", ["gzip", "br", "deflate", "bogus"])
async def test_request_content_encoding_is_ignored(
    http: aiohttp.ClientSession, namespace: str, encoding: str
) -> None:
    """k8s.io/apiserver never reads a request's Content-Encoding: a plain body is taken."""
    body = b'{"metadata":{"name":"enc-%s"}}' % encoding.encode()
    headers = {**CM, "Content-Encoding": encoding}
    async with http.post(configmaps(namespace), data=body, headers=headers) as resp:
        code, obj = await _answer(resp)
    assert code == 201, obj


async def test_a_compressed_body_is_undecodable_json(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    body = gzip.compress(b'{"metadata":{"name":"z"}}')
    headers = {**CM, "Content-Encoding": "gzip"}
    async with http.post(configmaps(namespace), data=body, headers=headers) as resp:
        code, status = await _answer(resp)
    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"].startswith(
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get "
        "version/kind; json parse error"
    )


async def test_resource_version_on_create(http: aiohttp.ClientSession, namespace: str) -> None:
    """etcd3 store's ErrResourceVersionSetOnCreate is a plain error: 500, no reason. A
    resourceVersion its versioner cannot parse is not "set": the object is created."""
    body = {"metadata": {"name": "rv", "resourceVersion": "5"}}
    async with http.post(configmaps(namespace), json=body) as resp:
        code, status = await _answer(resp)
    assert code == 500 and "reason" not in status
    assert status["message"] == "resourceVersion should not be set on objects to be created"
    body = {"metadata": {"name": "rv", "resourceVersion": "abc"}}
    async with http.post(configmaps(namespace), json=body) as resp:
        code, obj = await _answer(resp)
    assert code == 201 and obj["metadata"]["resourceVersion"] != "abc"


async def test_object_etcd_refuses_as_too_large(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    """Under the 3 MiB body limit but over etcd's 1.5 MiB request limit (and over its
    2 MiB gRPC limit): kube-apiserver passes etcd's error on, 500 without a reason. A Pod
    with a big env value (a ConfigMap's data is limited to 1 MiB by validation: 422)."""
    for name, size, message in (
        ("big1", 1_700_000, "etcdserver: request is too large"),
        ("big2", 2_300_000, "grpc: received message larger than max"),
    ):
        container = {"name": "c", "image": "x", "env": [{"name": "BIG", "value": "x" * size}]}
        body = orjson.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                             "spec": {"containers": [container]}})  # fmt: skip
        pods = f"/api/v1/namespaces/{namespace}/pods"
        async with http.post(pods, data=io.BytesIO(body), headers=CM) as resp:
            code, status = await _answer(resp)
        assert code == 500 and "reason" not in status, status
        assert status["message"].startswith(message)


async def _raw_exchange(url: str, request: bytes) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(request)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return answer


@pytest.mark.parametrize(
    "request_line",
    [
        b"G\x01T /api/v1/namespaces HTTP/1.1\r\n",  # invalid method
        b"GET /api/v1/name spaces\x7f HTTP/1.1\r\n",  # bad characters in the target
        b"GET /api/v1 HTTP/9.9\r\n",
    ],
)
async def test_malformed_http_is_a_quiet_400(
    server_factory: ServerFactory, request_line: bytes
) -> None:
    server = server_factory()
    answer = await _raw_exchange(server.url, request_line + b"Host: x\r\n\r\n")
    assert answer.split(b" ", 2)[1] == b"400", answer
    server.stop()
    log = server.log()
    assert "Traceback" not in log and " ERROR " not in log, log


async def test_long_header_lines_are_served(http: aiohttp.ClientSession) -> None:
    """Go serves up to 1 MiB of headers (kube's bearer tokens can be long)."""
    async with http.get("/api/v1/namespaces", headers={"X-Long": "a" * 20_000}) as resp:
        assert resp.status == 200


LIST_TYPES = (
    "application/json, application/yaml, application/vnd.kubernetes.protobuf, "
    "application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
)
OBJECT_TYPES = "application/json, application/yaml, application/vnd.kubernetes.protobuf"


@pytest.mark.parametrize(
    ("method", "suffix", "headers", "available"),
    [
        ("GET", "", {"Accept": "text/html"}, LIST_TYPES),
        ("GET", "", {"Accept": "application/*"}, LIST_TYPES),
        ("GET", "/x", {"Accept": "text/html"}, OBJECT_TYPES),
        ("POST", "", {"Accept": "text/html", "Content-Length": "2"}, OBJECT_TYPES),
        ("PATCH", "/x", {"Content-Length": "0"}, ""),  # no route consumes application/json
    ],
)
async def test_go_restful_406_when_no_route_produces_or_consumes(
    http: aiohttp.ClientSession,
    namespace: str,
    method: str,
    suffix: str,
    headers: dict[str, str],
    available: str,
) -> None:
    data = b"{}" if headers.get("Content-Length") == "2" else None
    headers = {"Content-Type": "application/json", **headers}
    path = configmaps(namespace) + suffix
    async with http.request(method, path, data=data, headers=headers) as resp:
        code, status = await _answer(resp)
    message = f"406: Not Acceptable\n\nAvailable representations: {available}"
    assert (code, status["message"], status["details"]) == (406, message, {})


async def test_go_restful_415_lists_what_it_produces_without_a_content_length(
    server: ServerProcess,
) -> None:
    """A POST with no Content-Length header and an Accept nothing produces."""
    request = (
        b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n"
        b"Accept: text/html\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
    )
    answer = await _raw_exchange(server.url, request)
    assert answer.split(b" ", 2)[1] == b"415", answer
    assert b"415: Unsupported Media Type\\n\\nAvailable representations: application/json" in answer


SCHEME = 'in scheme "pkg/api/legacyscheme/scheme.go:30"'


@pytest.mark.parametrize(
    ("path", "api_version", "kind", "message"),
    [
        ("pods", "v1", "PodList",
         'PodList in version "v1" cannot be handled as a Pod: converting (v1.PodList) to '
         "(core.Pod): unknown conversion"),
        ("pods", "v1", "DeleteOptions",
         'DeleteOptions in version "v1" cannot be handled as a Pod: converting '
         "(v1.DeleteOptions) to (core.Pod): unknown conversion"),
        ("pods", "v1", "Foo",
         f'Foo in version "v1" cannot be handled as a Pod: no kind "Foo" is registered for '
         f'version "v1" {SCHEME}'),
        ("apis/batch/v1/jobs", "v1", "Pod",
         'Pod in version "v1" cannot be handled as a Job: converting (v1.Pod) to (batch.Job): '
         "unknown conversion"),
        ("apis/apps/v1/deployments", "apps/v1beta1", "Deployment",
         "the API version in the data (apps/v1beta1) does not match the expected API version "
         "(apps/v1)"),
        ("apis/apps/v1/deployments", "apps/v9", "Deployment",
         'Deployment in version "v9" cannot be handled as a Deployment: no kind "Deployment" '
         f'is registered for version "apps/v9" {SCHEME}'),
        ("events", "events.k8s.io/v1", "Event",
         "the API version in the data (events.k8s.io/v1) does not match the expected API "
         "version (v1)"),
    ],
)  # fmt: skip
async def test_a_body_of_another_kind_or_version(
    http: aiohttp.ClientSession, namespace: str, path: str, api_version: str, kind: str,
    message: str,
) -> None:  # fmt: skip
    """As measured on kube-apiserver: the decoder's words for each way a body misses."""
    prefix, _, plural = path.rpartition("/")
    url = f"/{prefix or 'api/v1'}/namespaces/{namespace}/{plural}"
    body = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "k"}}
    async with http.post(url, json=body) as resp:
        code, status = await _answer(resp)
    assert (code, status["reason"], status["message"]) == (400, "BadRequest", message)


UNKNOWN_FORMAT = "the body of the request was in an unknown format - accepted media types include: "


@pytest.mark.parametrize(
    ("method", "suffix", "query", "content_type", "code", "message"),
    [
        # the decoder's media type comes before the options' validation
        ("POST", "", "?fieldManager=%01", "application/json-patch+json", 415, UNKNOWN_FORMAT),
        # Go's mime.ParseMediaType refuses empty parameters
        ("POST", "", "", "application/json;;;", 415, UNKNOWN_FORMAT),
        # DeleteOptions bodies go through the same negotiation
        ("DELETE", "", "", "application/merge-patch+json", 415, UNKNOWN_FORMAT),
        # the deprecated /watch/ paths serve GET only
        ("POST", "watch", "", "application/json", 405, "the server does not allow this method"),
        # an integer parameter given empty is ParseInt("")
        ("GET", "", "?limit=", "", 400, 'strconv.ParseInt: parsing "": invalid syntax'),
    ],
)
async def test_request_edges_measured_on_kube_apiserver(
    http: aiohttp.ClientSession,
    namespace: str,
    method: str,
    suffix: str,
    query: str,
    content_type: str,
    code: int,
    message: str,
) -> None:
    path = configmaps(namespace) + query
    if suffix == "watch":
        path = path.replace("/api/v1/", "/api/v1/watch/")
    body = b'{"kind":"DeleteOptions","apiVersion":"v1"}' if method == "DELETE" else b"{}"
    headers = {"Content-Type": content_type} if content_type else {}
    async with http.request(
        method, path, data=body if content_type else None, headers=headers
    ) as r:
        status_code, status = await _answer(r)
    assert status_code == code and status["message"].startswith(message), status


@pytest.mark.parametrize(
    ("content_type", "body", "code"),
    [("application/json", b"null", 422), ("application/yaml", b"", 422),
     ("application/yaml", b"~", 422), ("application/json", b"", 400)],
)  # fmt: skip
async def test_a_null_document_is_the_empty_object(
    http: aiohttp.ClientSession, namespace: str, content_type: str, body: bytes, code: int
) -> None:
    """Measured: null (and an empty YAML document) decodes into an empty object, which
    validation then refuses (no name); an empty JSON body does not decode."""
    headers = {"Content-Type": content_type}
    async with http.post(configmaps(namespace), data=body, headers=headers) as resp:
        status_code, status = await _answer(resp)
    assert status_code == code, status
