"""Request bodies and routing: JSON and YAML in, 415/400/413 with upstream wording,
kind/apiVersion checks, unknown paths, and that no error ever carries a traceback."""

from __future__ import annotations

import io
from typing import Any

import aiohttp
import pytest

pytestmark = pytest.mark.etcd

JSON = dict[str, Any]


def pods(ns: str) -> str:
    return f"/api/v1/namespaces/{ns}/pods"


async def post_raw(
    http: aiohttp.ClientSession, path: str, body: bytes, content_type: str
) -> tuple[int, JSON]:
    async with http.post(path, data=body, headers={"Content-Type": content_type}) as resp:
        data: JSON = await resp.json()
        return resp.status, data


async def test_yaml_body_and_yaml_response(http: aiohttp.ClientSession, namespace: str) -> None:
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y1\ndata:\n  k: v\n"
    code, obj = await post_raw(
        http, f"/api/v1/namespaces/{namespace}/configmaps", body, "application/yaml"
    )
    assert code == 201 and obj["data"] == {"k": "v"}
    async with http.get(
        f"/api/v1/namespaces/{namespace}/configmaps/y1", headers={"Accept": "application/yaml"}
    ) as resp:
        assert resp.headers["Content-Type"].startswith("application/yaml")
        assert "name: y1" in await resp.text()


async def test_yaml_values_json_cannot_hold_are_converted_as_upstream(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    """Keys that YAML resolves to booleans or numbers, ``!!binary``, a timestamp: as
    sigs.k8s.io/yaml's YAMLToJSON writes them (here they were Python values no JSON
    encoder takes: a 500); ``.inf`` is refused as there (here it was written null)."""
    cms = f"/api/v1/namespaces/{namespace}/configmaps"
    body = (b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y-keys}\n"
            b"data: {on: a, 1: b, c: !!binary aGVsbG8=, d: 2001-12-14t21:59:43.10-05:00}\n")
    code, obj = await post_raw(http, cms, body, "application/yaml")
    assert code == 201, obj
    assert obj["data"] == {"true": "a", "1": "b", "c": "hello",
                           "d": "2001-12-14t21:59:43.10-05:00"}  # fmt: skip
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y-inf}\ndata: {a: .inf}\n"
    code, status = await post_raw(http, cms, body, "application/yaml")
    assert code == 400 and status["reason"] == "BadRequest", status
    assert "json: unsupported value: +Inf" in status["message"]


async def test_unsupported_media_type_is_415(http: aiohttp.ClientSession, namespace: str) -> None:
    code, status = await post_raw(http, pods(namespace), b"<pod/>", "application/xml")
    assert code == 415
    assert status["reason"] == "UnsupportedMediaType"
    assert status["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml, application/vnd.kubernetes.protobuf"
    )


async def test_malformed_json_is_400(http: aiohttp.ClientSession, namespace: str) -> None:
    code, status = await post_raw(http, pods(namespace), b'{"kind": "Pod",', "application/json")
    assert code == 400
    assert status["reason"] == "BadRequest"
    assert status["message"].startswith(
        "the object provided is unrecognized (must be of type Pod): couldn't get version/kind; "
        "json parse error"
    )
    assert "Traceback" not in status["message"]


async def test_wrong_kind_and_api_version_are_400(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    body = b'{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"}}'
    code, status = await post_raw(http, pods(namespace), body, "application/json")
    assert code == 400
    assert status["message"] == (
        'Service in version "v1" cannot be handled as a Pod: converting (v1.Service) to '
        "(core.Pod): unknown conversion"
    )
    body = b'{"apiVersion":"apps/v1","kind":"Pod","metadata":{"name":"s"}}'
    code, status = await post_raw(http, pods(namespace), body, "application/json")
    assert code == 400
    assert status["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: no kind "Pod" is registered for '
        'version "apps/v1" in scheme "pkg/api/legacyscheme/scheme.go:30"'
    )
    # the endpoint's kind at another version of its group decodes, then is refused
    body = b'{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler"}'
    path = f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers"
    code, status = await post_raw(http, path, body, "application/json")
    assert code == 400
    assert status["message"] == (
        "the API version in the data (autoscaling/v1) does not match the expected API "
        "version (autoscaling/v2)"
    )


async def test_missing_kind_is_defaulted(http: aiohttp.ClientSession, namespace: str) -> None:
    body = b'{"metadata":{"name":"nokind"},"spec":{"containers":[{"name":"c","image":"i"}]}}'
    code, obj = await post_raw(http, pods(namespace), body, "application/json")
    assert code == 201
    assert obj["kind"] == "Pod" and obj["apiVersion"] == "v1"


async def test_body_over_3_mib_is_413(http: aiohttp.ClientSession, namespace: str) -> None:
    big = b'{"metadata":{"name":"big","annotations":{"a":"' + b"x" * (3 * 1024 * 1024) + b'"}}}'
    async with http.post(
        pods(namespace), data=io.BytesIO(big), headers={"Content-Type": "application/json"}
    ) as resp:
        code, status = resp.status, await resp.json()
    assert code == 413
    assert status["reason"] == "RequestEntityTooLarge"
    assert status["message"] == "Request entity too large: limit is 3145728"


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/widgets",
        "/apis/apps/v1/widgets",
        "/api/v1/namespaces/x/nodes",
        "/api/v1/namespaces/x/namespaces",  # a cluster-scoped resource has no namespaced route
        "/api/v1/namespaces/x/namespaces/x",
        "/api/v1/namespaces/x/pods/p/logs",  # (pods/log is served: 'pods "p" not found')
        "/api/v2",
    ],
)
async def test_unknown_paths_are_404_status(http: aiohttp.ClientSession, path: str) -> None:
    async with http.get(path) as resp:
        status = await resp.json()
        assert resp.status == 404
    assert status["kind"] == "Status" and status["reason"] == "NotFound"
    assert status["message"] == "the server could not find the requested resource"
    assert status["details"] == {}


@pytest.mark.parametrize("path", ["/apis/example.com/v1/widgets", "/apis/nope", "/nope"])
async def test_paths_outside_served_groups_are_plain_404(
    http: aiohttp.ClientSession, path: str
) -> None:
    """kube-apiserver's last handler is Go's http.NotFound: text, not a Status."""
    async with http.get(path) as resp:
        assert resp.status == 404
        assert resp.headers["Content-Type"] == "text/plain; charset=utf-8"
        assert await resp.text() == "404 page not found\n"


async def test_field_validation_modes(http: aiohttp.ClientSession, namespace: str) -> None:
    body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fv"},"bogus":1}'
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    code, status = await post_raw(http, path + "?fieldValidation=Strict", body, "application/json")
    assert code == 400
    assert status["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'unknown field "bogus"'
    )
    async with http.post(path, data=body, headers={"Content-Type": "application/json"}) as resp:
        assert resp.status == 201
        assert resp.headers.getall("Warning") == ['299 - "unknown field \\"bogus\\""']
        assert "bogus" not in await resp.json()
    code, status = await post_raw(http, path + "?fieldValidation=Loud", body, "application/json")
    assert code == 422
    assert status["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loud": '
        'supported values: "", "Ignore", "Strict", "Warn"'
    )


async def test_schema_violation_is_422(http: aiohttp.ClientSession, namespace: str) -> None:
    body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"typed"},"data":"x"}'
    code, status = await post_raw(
        http, f"/api/v1/namespaces/{namespace}/configmaps", body, "application/json"
    )
    assert code == 422
    assert status["reason"] == "Invalid"
    assert status["message"].startswith('ConfigMap "typed" is invalid: data')
