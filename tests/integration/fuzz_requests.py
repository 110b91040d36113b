"""A seeded generator of hostile HTTP requests for the fuzz suite (``test_fuzz.py``).

Pure functions of a ``random.Random``: the same seed gives the same requests. Each
request is either one aiohttp can send (``FuzzRequest``: any method, any path bytes as
an already-encoded URL, a query with repeated and hostile parameters, odd headers,
bodies from valid objects through mutated ones to random bytes) or raw bytes written
to the socket (``raw``: malformed request lines and headers, truncated bodies, and
well-formed requests whose header values carry bytes that are not UTF-8 or control
characters, which aiohttp's client would not send). Bodies include field names with
control characters and, rarely, large hostile bodies (a 0.5-3 MB flow sequence in JSON
or YAML, a protobuf ConfigMap of 50,000-300,000 map entries).
"""

from __future__ import annotations

import json
import random
import string
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FuzzRequest", "generate"]

NAMESPACE = "fz"  # exists on the fuzzed server, with a few objects in it

RESOURCES = (
    ("", "v1", "pods", True), ("", "v1", "configmaps", True), ("", "v1", "namespaces", False),
    ("", "v1", "services", True), ("", "v1", "nodes", False), ("", "v1", "events", True),
    ("", "v1", "secrets", True), ("", "v1", "endpoints", True),
    ("apps", "v1", "deployments", True), ("batch", "v1", "jobs", True),
    ("coordination.k8s.io", "v1", "leases", True),
    ("rbac.authorization.k8s.io", "v1", "clusterroles", False),
    ("autoscaling", "v2", "horizontalpodautoscalers", True),
    ("example.com", "v1", "widgets", True), ("", "v9", "pods", True),
)  # fmt: skip
KINDS = {"pods": "Pod", "configmaps": "ConfigMap", "namespaces": "Namespace",
         "services": "Service", "nodes": "Node", "events": "Event", "secrets": "Secret",
         "endpoints": "Endpoints", "deployments": "Deployment", "jobs": "Job",
         "leases": "Lease", "clusterroles": "ClusterRole",
         "horizontalpodautoscalers": "HorizontalPodAutoscaler", "widgets": "Widget"}  # fmt: skip
NAMES = ("a", "p0", "cm0", "fz", "default", "kube-system", "x" * 300, "A_B", "-a", "a.b",
         "..", ".", "%2F", "%zz", "%ff", "%00", "caf%C3%A9", "a%20b", "~", "p0:x", "*")  # fmt: skip
SUBRESOURCES = ("status", "scale", "log", "finalize", "exec", "eviction", "foo", "")
METHODS = {"GET": 30, "POST": 20, "PUT": 15, "PATCH": 15, "DELETE": 12, "HEAD": 2,
           "OPTIONS": 1, "FOO": 1, "PROPFIND": 1, "CONNECT": 1, "TRACE": 1}  # fmt: skip
OBJECT_NAMES = ("f0", "f1", "cm0", "p0", "fz", "a")  # the seeded objects and a few more
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
               "application/strategic-merge-patch+json")  # fmt: skip
CONTENT_TYPES = (
    "application/json", "application/json", "application/yaml", "application/json-patch+json",
    "application/merge-patch+json", "application/strategic-merge-patch+json",
    "application/apply-patch+yaml", "application/vnd.kubernetes.protobuf", "text/plain",
    "application/json; charset=utf-8", "application/x-www-form-urlencoded", "", "*/*",
    "application/json;;;", "multipart/form-data; boundary=x", "application/cbor",
)  # fmt: skip
ACCEPTS = (
    "application/json", "application/yaml", "*/*", "",
    "application/json;as=Table;v=v1;g=meta.k8s.io",
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json",
    "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
    "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
    "application/json;as=APIGroupDiscoveryList;v=v2;g=apidiscovery.k8s.io",
    "application/json;as=Table;v=v9;g=meta.k8s.io", "text/html", "application/xml;q=0.1",
    "application/vnd.kubernetes.protobuf", "application/json;q=abc", ";;;,,,",
)  # fmt: skip
SPECS: dict[str, dict[str, Any]] = {
    "pods": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
    "configmaps": {"data": {"k": "v"}},
    "secrets": {"stringData": {"k": "v"}, "type": "Opaque"},
    "services": {"spec": {"ports": [{"port": 80}], "selector": {"app": "x"}}},
    "deployments": {"spec": {"selector": {"matchLabels": {"app": "x"}}, "template": {
        "metadata": {"labels": {"app": "x"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}},
    "leases": {"spec": {"holderIdentity": "h"}},
    "events": {"involvedObject": {"kind": "Pod", "name": "p0"}, "reason": "R"},
}  # fmt: skip
ENCODINGS = ("gzip", "br", "deflate", "identity", "zstd", "x-junk", "gzip, br")
QUERY_VALUES: dict[str, tuple[str, ...]] = {
    "resourceVersion": ("", "0", "1", "abc", "-1", "99999999999999999999", "1e3", " 1", "0x10"),
    "resourceVersionMatch": ("", "Exact", "NotOlderThan", "exact", "junk"),
    "limit": ("", "0", "1", "-1", "abc", "500", "99999999999999999999", "1.5"),
    "continue": ("", "abc", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJhIn0",
                 "eyJ2IjoieCJ9", "!!!!", "e30"),
    "labelSelector": ("", "a=b", "a in (x,y)", "!a", "a!=", "a==b,c", "(", "a in (",
                      "x" * 70 + "=y", "a=b\x00", "é=ü"),
    "fieldSelector": ("", "metadata.name=a", "spec.nodeName=n", "status.phase!=Running",
                      "bogus=1", "metadata.name", "=", "metadata.name in (a)"),
    "watch": ("1", "true", "t", "T", "0", "false", "x", ""),
    "timeoutSeconds": ("0", "1", "-1", "abc", "99999999999"),
    "allowWatchBookmarks": ("true", "false", "x"),
    "sendInitialEvents": ("true", "false", "x"),
    "dryRun": ("All", "all", "", "x"),
    "fieldValidation": ("Strict", "Warn", "Ignore", "x", ""),
    "fieldManager": ("m", "x" * 200, "\x01", ""),
    "gracePeriodSeconds": ("0", "-1", "abc", "30"),
    "propagationPolicy": ("Foreground", "Background", "Orphan", "x"),
    "orphanDependents": ("true", "x"),
    "includeObject": ("None", "Metadata", "Object", "x"),
    "pretty": ("true", "1", "x"),
    "junk": ("x", ""),
}  # fmt: skip


@dataclass
class FuzzRequest:
    """One request: ``raw`` bytes for the socket, or method/target/headers/body."""

    method: str = "GET"
    target: str = "/"  # path + query, already percent-encoded (sent as it is)
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    raw: bytes = b""

    @property
    def is_watch(self) -> bool:
        """Whether the server may answer with a stream: a ``/watch/`` path, or a
        ``watch`` parameter that is not false (as kube's query conversion reads a bool:
        only absent, ``0`` and ``false`` are false; ``?watch`` alone is true)."""
        if "/watch/" in self.target:
            return True
        query = self.target.partition("?")[2]
        values = [p.partition("=")[2] for p in query.split("&") if p.partition("=")[0] == "watch"]
        return bool(values) and values[0].lower() not in ("0", "false")

    def describe(self) -> str:
        if self.raw:
            return f"raw {self.raw[:200]!r}"
        return f"{self.method} {self.target[:300]} {self.headers} body={self.body[:200]!r}"


Resource = tuple[str, str, str, bool]


def _path(rng: random.Random, resource: Resource, method: str, name: str) -> str:
    group, version, plural, namespaced = resource
    root = f"/apis/{group}/{version}" if group else f"/api/{version}"
    if rng.random() < 0.03:
        return rng.choice(("/api", "/apis", "/api/v1", "/apis/apps", "/apis/apps/v1",
                           "/version", "/healthz", "/readyz?verbose", "/livez/ping",
                           "/metrics", "/openapi/v3", "/openapi/v3/api/v1", "/", "/foo",
                           "//api//v1", "/api/v1/..", "/apis/foo.example.com"))  # fmt: skip
    parts = [root]
    if rng.random() < 0.05:
        parts.append("watch")
    if namespaced and rng.random() < 0.9:
        parts += ["namespaces", NAMESPACE if rng.random() < 0.9 else rng.choice(NAMES)]
    parts.append(plural if rng.random() < 0.97 else rng.choice(NAMES))
    on_object = 0.15 if method == "POST" else 0.3 if method in ("GET", "DELETE") else 0.9
    if rng.random() < on_object:
        parts.append(name)
        if rng.random() < 0.15:
            parts.append(rng.choice(SUBRESOURCES))
            if rng.random() < 0.1:
                parts.append(rng.choice(NAMES))
    path = "/".join(parts)
    return path + ("/" if rng.random() < 0.03 else "")


def _query(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return ""
    pairs: list[str] = []
    for _ in range(rng.randint(1, 4)):
        key = rng.choice(list(QUERY_VALUES))
        value = rng.choice(QUERY_VALUES[key])
        pairs.append(f"{key}={_encode(value)}")
    if rng.random() < 0.05:
        pairs.append(rng.choice(("%zz=1", "a", "=", "&&", "watch", "limit=%ff", "x=%00")))
    return "?" + "&".join(pairs)


def _encode(value: str) -> str:
    safe = string.ascii_letters + string.digits + "-._~=!,()"
    return "".join(c if c in safe else "".join(f"%{b:02X}" for b in c.encode()) for c in value)


def _headers(rng: random.Random, method: str) -> dict[str, str]:
    headers: dict[str, str] = {}
    if method in ("POST", "PUT", "PATCH", "DELETE") or rng.random() < 0.05:
        roll = rng.random()
        if method == "PATCH":
            usual = rng.choice(PATCH_TYPES)
        else:
            usual = "application/json" if roll < 0.6 else "application/yaml"
        headers["Content-Type"] = usual if roll < 0.85 else rng.choice(CONTENT_TYPES)
    roll = rng.random()
    if roll < 0.2:
        headers["Accept"] = rng.choice(ACCEPTS[:9])
    elif roll < 0.25:
        headers["Accept"] = rng.choice(ACCEPTS)
    if rng.random() < 0.05:
        headers["Content-Encoding"] = rng.choice(ENCODINGS)
    if rng.random() < 0.03:
        headers["Accept-Encoding"] = rng.choice(ENCODINGS)
    if rng.random() < 0.02:
        headers["X-Long"] = "a" * rng.choice((100, 9000, 70_000))
    if rng.random() < 0.02:
        headers["Authorization"] = "Bearer " + "t" * rng.randint(1, 5000)
    return headers


def _valid_object(rng: random.Random, resource: Resource, name: str) -> dict[str, Any]:
    group, version, plural, _ = resource
    meta: dict[str, Any] = {"name": name}
    if rng.random() < 0.3:
        meta["labels"] = {"app": rng.choice(("x", "y"))}
    if rng.random() < 0.1:
        meta["namespace"] = rng.choice((NAMESPACE, "other"))
    api_version = f"{group}/{version}" if group else version
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": KINDS.get(plural, "Widget")}
    obj["metadata"] = meta
    obj.update(SPECS.get(plural, {}))
    return obj


def _junk_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.3:
        return rng.choice((None, True, 0, -1, 1.5, 2**70, "", "x", "é\u2028", "\ud7ff" * 3))
    if roll < 0.6:
        return [_junk_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(("a", "metadata", "spec", "kind", "name", "labels", "$patch", "")):
            _junk_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}  # fmt: skip


def _mutate(rng: random.Random, obj: dict[str, Any]) -> Any:
    meta = obj["metadata"]
    choice = rng.randrange(14)
    if choice == 0:
        obj["metadata"] = _junk_value(rng)
    elif choice == 1:
        meta["labels"] = {"a": rng.choice((1, None, [], {}, "x" * 70, "é"))}
    elif choice == 2:
        meta["name"] = _junk_value(rng)
    elif choice == 3:
        obj["kind"] = rng.choice(("Service", "Foo", "", 5, "PodList", "Status", "DeleteOptions"))
    elif choice == 4:
        obj["apiVersion"] = rng.choice(("apps/v1", "v2", "", "/", "a/b/c", None, "v1/"))
    elif choice == 5:
        meta["resourceVersion"] = rng.choice(("1", "abc", "0", "", 5))
    elif choice == 6:
        meta[rng.choice(("namespace", "uid", "generateName", "finalizers", "annotations",
                         "ownerReferences", "managedFields", "deletionTimestamp",
                         "creationTimestamp"))] = _junk_value(rng)  # fmt: skip
    elif choice == 7:
        obj[rng.choice(("spec", "status", "data", "binaryData"))] = _junk_value(rng)
    elif choice == 8:
        nested: Any = {}
        for _ in range(rng.choice((50, 199, 201, 260, 400))):
            nested = {"a": nested}
        obj["data"] = nested
    elif choice == 9:
        return _junk_value(rng)
    elif choice == 10:
        obj["data"] = {"k": "x" * rng.choice((1000, 100_000, 1_600_000))}
    elif choice == 11:  # a field name no header can carry (issue 23 §4)
        obj[rng.choice(CONTROL_KEYS)] = "x"
    elif choice == 12:
        meta[rng.choice(("labels", "annotations"))] = {rng.choice(CONTROL_KEYS): "x"}
    return obj


CONTROL_KEYS = ("\x00", "a\nb", "\r", "\x7f", "\x1b[31m", "\u2028", '"', "\\", "é\u0085")
# header values the HTTP parser takes but that are not UTF-8 (issue 23 §3)
HOSTILE_HEADER_VALUES = (b"\xff", b"ua\xff", b"\xc3\x28", b"adm\xffin", b"\xfe\xff\xfe",
                         b"caf\xc3\xa9", b"\xed\xa0\x80")  # fmt: skip
HOSTILE_HEADERS = ("User-Agent", "Audit-ID", "X-Forwarded-For", "X-Real-Ip", "Accept",
                   "Authorization", "Impersonate-User", "Impersonate-Group", "Content-Type",
                   "Accept-Encoding")  # fmt: skip


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _large_protobuf(entries: int) -> bytes:
    """A ConfigMap in kube's protobuf envelope (``k8s\\0`` + runtime.Unknown) whose
    ``data`` map has ``entries`` tiny entries: ~10 bytes an entry to decode one by one."""
    data = b"".join(_field(2, _field(1, b"k%d" % i) + _field(2, b"v")) for i in range(entries))
    configmap = _field(1, _field(1, b"big")) + data
    type_meta = _field(1, b"v1") + _field(2, b"ConfigMap")
    return b"k8s\x00" + _field(1, type_meta) + _field(2, configmap)


def _large_body(rng: random.Random, content_type: str) -> bytes:
    """The costliest body per byte for its decoder: a long flow sequence of zeros (a
    protobuf ConfigMap of a hundred thousand map entries and more)."""
    count = rng.choice((250_000, 750_000, 1_500_000))
    if "protobuf" in content_type:
        return _large_protobuf(count // 5)
    zeros = b",".join([b"0"] * (count - 100))
    if "yaml" in content_type:
        return b"metadata: {name: big}\nspec: {x: [" + zeros + b"]}"
    if "json-patch" in content_type:
        return b'[{"op":"test","path":"/x","value":[' + zeros + b"]}]"
    return b'{"metadata":{"name":"big"},"spec":{"x":[' + zeros + b"]}}"


def _dumps(value: Any) -> bytes:
    """JSON of any generated value (integers past 64 bits, deep nesting included)."""
    return json.dumps(value, ensure_ascii=False).encode()


def _patch_body(rng: random.Random, content_type: str) -> bytes:
    if "json-patch" in content_type:
        ops = [{"op": rng.choice(("add", "remove", "replace", "move", "copy", "test", "x")),
                "path": rng.choice(("/metadata/labels/a", "/data/k", "/", "", "/metadata/name",
                                    "/spec/containers/-", "/a~1b", "~", "/metadata/0",
                                    "/metadata/labels", "/metadata/resourceVersion")),
                "value": rng.choice(({"a": "b"}, "v", _junk_value(rng))), "from": "/data"}
               for _ in range(rng.randint(0, 3))]  # fmt: skip
        return _dumps(ops if rng.random() < 0.9 else _junk_value(rng))
    patch: Any = rng.choice((
        {"metadata": {"labels": {"a": "b"}}}, {"data": {"k": None}}, {"metadata": None},
        {"metadata": {"name": "other"}}, {"spec": {"containers": [{"name": "c", "$patch":
         rng.choice(("delete", "replace", "x"))}]}}, {"$patch": "replace"}, {"kind": "Service"},
        {"metadata": {"resourceVersion": "1"}}, {"apiVersion": "apps/v1"},
        {"metadata": {"$retainKeys": ["x"]}}, {"spec": {"$setElementOrder/containers": [{}]}},
    ))  # fmt: skip
    return _dumps(patch if rng.random() < 0.8 else _junk_value(rng))


def _body(
    rng: random.Random, method: str, resource: Resource, name: str, content_type: str
) -> bytes:
    if method in ("GET", "HEAD", "OPTIONS") and rng.random() < 0.95:
        return b""
    roll = rng.random()
    if roll < 0.03:
        return b""
    if roll < 0.06:
        return rng.randbytes(rng.randint(1, 200))
    if roll < 0.1:
        return rng.choice((b"{", b"[]", b"null", b"1", b'"x"', b"{}", b"\xff\xfe{}",
                           b'{"a":1,"a":2}', b"a: &a [*a, *a]", b"- - - -", b"\x00",
                           b"k8s\x00\n\x02v1", b"a: [" * 100))  # fmt: skip
    if roll < 0.104:
        return _large_body(rng, content_type)
    if method == "PATCH":
        return _patch_body(rng, content_type)
    if method == "DELETE":
        options: Any = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if rng.random() < 0.5:
            options["preconditions"] = {
                "uid": rng.choice(("x", "", None)),
                "resourceVersion": rng.choice(("1", "abc", None)),
            }
        if rng.random() < 0.3:
            options[rng.choice(("dryRun", "gracePeriodSeconds", "propagationPolicy"))] = (
                _junk_value(rng))  # fmt: skip
        return _dumps(options) if rng.random() < 0.7 else b""
    obj = _valid_object(rng, resource, name)
    return _dumps(_mutate(rng, obj) if rng.random() < 0.5 else obj)  # JSON is YAML too


def _raw(rng: random.Random) -> bytes:
    """Malformed HTTP: bad request lines, header syntax, bodies shorter than declared."""
    roll = rng.randrange(8)
    if roll == 0:
        return b"G\x01T /api/v1 HTTP/1.1\r\nHost: x\r\n\r\n"
    if roll == 1:
        return b"GET /api/v1/na mes\x7f\x80 HTTP/1.1\r\nHost: x\r\n\r\n"
    if roll == 2:
        return b"GET /api/v1 HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1 << 21) + b"\r\n\r\n"
    if roll == 3:
        return b"GET /api/v1 HTTP/1.1\r\nBad Header Line\r\n\r\n"
    if roll == 4:
        return b"POST /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}"
    if roll == 5:
        return (b"POST /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                b"\r\nzz\r\n{}\r\n0\r\n\r\n")  # fmt: skip
    if roll == 6:
        return rng.randbytes(rng.randint(1, 300))
    return b"GET /api/v1 HTTP/1.1\r\nHost: x\r\n" + b"X: y\r\n" * 40_000 + b"\r\n"


def _hostile_header(rng: random.Random, request: FuzzRequest) -> FuzzRequest:
    """``request`` as raw bytes with one header value the client would not send."""
    headers = {"Host": "fuzz", **request.headers, "Content-Length": str(len(request.body))}
    lines = [f"{request.method} {request.target} HTTP/1.1".encode()]
    lines += [f"{k}: {v}".encode("utf-8", "replace") for k, v in headers.items()]
    value = rng.choice(HOSTILE_HEADER_VALUES)
    if rng.random() < 0.3:
        value += rng.choice((b"\x01", b"\x7f", b"\x00"))  # the parser refuses these: 400
    lines.append(rng.choice(HOSTILE_HEADERS).encode() + b": " + value)
    return FuzzRequest(raw=b"\r\n".join(lines) + b"\r\n\r\n" + request.body)


def generate(rng: random.Random) -> FuzzRequest:
    """One request (about one in twenty-five is raw bytes, one in thirty carries a
    header value that is not UTF-8)."""
    if rng.random() < 0.04:
        return FuzzRequest(raw=_raw(rng))
    if rng.random() < 0.033:
        inner = generate(rng)
        return inner if inner.raw else _hostile_header(rng, inner)
    method = rng.choices(list(METHODS), weights=list(METHODS.values()))[0]
    resource = rng.choice(RESOURCES[:6]) if rng.random() < 0.7 else rng.choice(RESOURCES)
    name = rng.choice(OBJECT_NAMES) if rng.random() < 0.9 else rng.choice(NAMES)
    target = _path(rng, resource, method, name) + _query(rng)
    headers = _headers(rng, method)
    body = _body(rng, method, resource, name, headers.get("Content-Type", ""))
    return FuzzRequest(method=method, target=target, headers=headers, body=body)
