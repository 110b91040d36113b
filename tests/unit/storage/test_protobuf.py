"""Kubernetes protobuf: JSON ⇄ wire round trips on realistic objects, checked against
protobuf's own parser (message classes made from the same compiled descriptors), the
``runtime.Unknown`` envelope byte for byte, and what the 0.32 schema cannot carry."""

from __future__ import annotations

import base64
import copy
from typing import Any

import orjson
import pytest
from google.protobuf import descriptor_pool, message_factory
from google.protobuf.message import Message as PbMessage

from lab import seed
from storage import codec
from storage.errors import CorruptObject
from storage.protobuf import codegen, converter
from storage.protobuf.converter import (
    ConversionError,
    Report,
    format_duration,
    parse_duration,
)
from storage.protobuf.serializer import (
    MAGIC,
    NotRegistered,
    Serializer,
    frame,
    get_serializer,
    unwrap,
    with_resource_version,
    wrap,
)
from storage.protobuf.wire import WireError

JSON = dict[str, Any]
TIME = "2024-05-06T07:08:09Z"


@pytest.fixture(scope="module")
def pb() -> Serializer:
    return get_serializer()


class Classes:
    """protobuf's own message classes for the schema (an independent decoder), any
    message by its full name."""

    def __init__(self, pb: Serializer) -> None:
        self._pool = descriptor_pool.DescriptorPool()
        for file in pb.raw.descriptors.file:
            self._pool.Add(file)

    def __getitem__(self, name: str) -> type[PbMessage]:
        return message_factory.GetMessageClass(self._pool.FindMessageTypeByName(name))


@pytest.fixture(scope="module")
def classes(pb: Serializer) -> Classes:
    return Classes(pb)


def deployment() -> JSON:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ns", "labels": {"app": "d"}, "generation": 3,
                     "creationTimestamp": TIME, "uid": "5c0f", "annotations": {"a": ""}},
        "spec": {
            "replicas": 0, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
            "selector": {"matchLabels": {"app": "d"},
                         "matchExpressions": [{"key": "k", "operator": "In", "values": ["a"]}]},
            "strategy": {"type": "RollingUpdate",
                         "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {
                    "containers": [{
                        "name": "nginx", "image": "nginx:1.27",
                        "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        "resources": {"limits": {"cpu": "500m", "memory": "128Mi"},
                                      "requests": {"cpu": "0.25"}},
                        "livenessProbe": {"httpGet": {"path": "/", "port": "http"},
                                          "periodSeconds": 10},
                        "env": [{"name": "A", "value": ""},
                                {"name": "B", "valueFrom": {"fieldRef": {
                                    "fieldPath": "metadata.name"}}}],
                        "securityContext": {"runAsUser": 0, "privileged": False},
                    }],
                    "tolerations": [{"key": "k", "operator": "Exists",
                                     "effect": "NoExecute", "tolerationSeconds": -1}],
                    "terminationGracePeriodSeconds": 30,
                },
            },
        },
        "status": {"observedGeneration": 3, "replicas": 1, "conditions": [{
            "type": "Available", "status": "True", "lastUpdateTime": TIME,
            "lastTransitionTime": TIME, "reason": "MinimumReplicasAvailable", "message": "ok"}]},
    }  # fmt: skip


def service() -> JSON:
    return {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "s", "namespace": "ns"},
        "spec": {"ports": [{"port": 80, "targetPort": 8080, "name": "a"},
                           {"port": 443, "targetPort": "https", "name": "b"}],
                 "selector": {"app": "d"}, "type": "ClusterIP",
                 "clusterIPs": ["10.0.0.1"], "clusterIP": "10.0.0.1"},
    }  # fmt: skip


def secret() -> JSON:
    return {
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": "s", "namespace": "ns"},
        "data": {"k": base64.b64encode(b"\x00\xffbinary").decode(), "empty": ""},
        "immutable": True,
    }  # fmt: skip


def events() -> list[JSON]:
    core = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e", "namespace": "ns"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "ns"},
        "reason": "Scheduled",
        "message": "ok",
        "type": "Normal",
        "count": 2,
        "firstTimestamp": TIME,
        "lastTimestamp": TIME,
        "eventTime": "2024-05-06T07:08:09.123456Z",
        "source": {"component": "sched"},
    }
    new = {
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "e2", "namespace": "ns"},
        "eventTime": "2024-05-06T07:08:09.000001Z", "reportingController": "c",
        "reportingInstance": "i", "action": "Bind", "reason": "Scheduled",
        "regarding": {"kind": "Pod", "name": "p"}, "type": "Normal",
    }  # fmt: skip
    return [core, new]


def lease() -> JSON:
    return {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "l", "namespace": "kube-node-lease"},
        "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40,
                 "renewTime": "2024-05-06T07:08:09.654321Z"},
    }  # fmt: skip


def controller_revision() -> JSON:
    return {
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": "r", "namespace": "ns"},
        "data": {"spec": {"template": {"x": [1, "two", None]}}}, "revision": 4,
    }  # fmt: skip


def crd() -> JSON:
    """A CustomResourceDefinition using every JSONSchemaProps special (our own .proto)."""
    size = {
        "type": "integer",
        "minimum": 1,
        "maximum": 10.5,
        "multipleOf": 0.25,
        "default": 3,
        "enum": [1, "two", None, {"a": [True]}],
        "example": 2,
    }
    schema = {
        "type": "object",
        "$ref": "#/definitions/x",
        "$schema": "http://json-schema.org/",
        "required": ["size"],
        "x-kubernetes-preserve-unknown-fields": True,
        "x-kubernetes-validations": [
            {"rule": "self.size > 0", "reason": "FieldValueInvalid", "optionalOldSelf": True}
        ],
        "properties": {
            "size": size,
            "list": {
                "type": "array",
                "items": {"type": "string"},
                "maxItems": 3,
                "x-kubernetes-list-type": "set",
            },
            "tuple": {
                "type": "array",
                "items": [{"type": "string"}, {"type": "integer"}],
                "additionalItems": False,
            },
            "map": {"type": "object", "additionalProperties": {"type": "string"}},
            "closed": {"type": "object", "additionalProperties": False},
            "deps": {"type": "object", "dependencies": {"a": ["b", "c"], "d": {"required": ["e"]}}},
            "ios": {
                "x-kubernetes-int-or-string": True,
                "anyOf": [{"type": "integer"}, {"type": "string"}],
            },
        },
        "definitions": {"x": {"type": "string", "externalDocs": {"url": "https://x"}}},
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["w"]},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": schema},
                               "subresources": {"status": {}},
                               "selectableFields": [{"jsonPath": ".spec.size"}]}],
                 "conversion": {"strategy": "Webhook", "webhook": {
                     "conversionReviewVersions": ["v1"],
                     "clientConfig": {"caBundle": "Q0E=", "service": {
                         "namespace": "ns", "name": "conv", "path": "/c", "port": 8443}}}}},
        "status": {"conditions": [{"type": "Established", "status": "True",
                                   "lastTransitionTime": TIME, "reason": "R"}],
                   "acceptedNames": {"plural": "widgets", "kind": "Widget"},
                   "storedVersions": ["v1"]},
    }  # fmt: skip


def apiservice() -> JSON:
    return {
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1.example.com"},
        "spec": {"group": "example.com", "version": "v1", "groupPriorityMinimum": 1000,
                 "versionPriority": 15, "caBundle": "Q0E=",
                 "service": {"namespace": "ns", "name": "api", "port": 443}},
        "status": {"conditions": [{"type": "Available", "status": "False",
                                   "lastTransitionTime": TIME, "message": "no"}]},
    }  # fmt: skip


OBJECTS = [
    ("pod", lambda: seed.pod(7, 3, 2)),
    ("node", lambda: seed.node(1)),
    ("namespace", lambda: seed.namespace(0)),
    ("configmap", lambda: seed.configmap(1, 2)),
    ("deployment", deployment),
    ("service", service),
    ("secret", secret),
    ("event", lambda: events()[0]),
    ("events.k8s.io", lambda: events()[1]),
    ("lease", lease),
    ("controllerrevision", controller_revision),
    ("customresourcedefinition", crd),
    ("apiservice", apiservice),
]


def test_jsonschemaprops_specials_on_the_wire(pb: Serializer, classes: Classes) -> None:
    """$ref, x-kubernetes-*, raw JSON and the OrBool/OrArray/OrStringArray unions as
    upstream's generated.pb.go lays them out (read by protobuf's own parser)."""
    name = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"
    parsed: Any = classes[name].FromString(unwrap(pb.encode(crd())).raw)
    root = parsed.spec.versions[0].schema.openAPIV3Schema
    assert (root.ref, root.schema) == ("#/definitions/x", "http://json-schema.org/")
    assert root.xKubernetesPreserveUnknownFields
    assert root.xKubernetesValidations[0].optionalOldSelf
    size = root.properties["size"]
    assert (size.maximum, size.multipleOf, size.default.raw) == (10.5, 0.25, b"3")
    assert [e.raw for e in size.enum] == [b"1", b'"two"', b"", b'{"a":[true]}']
    props = root.properties
    assert props["list"].items.schema.type == "string" and not props["list"].items.jSONSchemas
    assert [s.type for s in props["tuple"].items.jSONSchemas] == ["string", "integer"]
    assert not props["tuple"].additionalItems.allows
    assert props["map"].additionalProperties.allows
    assert props["map"].additionalProperties.schema.type == "string"
    assert not props["closed"].additionalProperties.HasField("schema")
    deps = props["deps"].dependencies
    assert list(deps["a"].property) == ["b", "c"] and list(deps["d"].schema.required) == ["e"]
    assert props["ios"].xKubernetesIntOrString
    assert parsed.spec.conversion.webhook.clientConfig.service.port == 8443
    assert parsed.spec.conversion.webhook.clientConfig.caBundle == b"CA"
    back = pb.decode(pb.encode(crd()))
    assert back["spec"]["versions"][0]["schema"] == crd()["spec"]["versions"][0]["schema"]


def assert_contains(expected: Any, actual: Any, path: str = "") -> None:
    """Every member of ``expected`` is in ``actual`` with the same value (actual may add
    what Go prints for zero values: ``status: {}``, ``creationTimestamp: null``)."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), path
        for key, value in expected.items():
            if value in ("", 0, False, None, [], {}) and key not in actual:
                continue  # omitempty zero: Go leaves it out
            assert key in actual, f"{path}.{key} missing"
            assert_contains(value, actual[key], f"{path}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), path
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            assert_contains(e, a, f"{path}[{i}]")
    else:
        assert expected == actual, f"{path}: {expected!r} != {actual!r}"


@pytest.mark.parametrize(("name", "make"), OBJECTS, ids=[n for n, _ in OBJECTS])
def test_round_trip(pb: Serializer, name: str, make: Any) -> None:
    obj = make()
    report = Report()
    data = pb.encode(copy.deepcopy(obj), report)
    assert report.unknown_json == []
    assert data.startswith(MAGIC)
    back = pb.decode(data, report)
    assert report.unknown_fields == []
    assert back["apiVersion"] == obj["apiVersion"] and back["kind"] == obj["kind"]
    expected = copy.deepcopy(obj)
    _normalize_quantities(expected)
    assert_contains(expected, back)
    assert pb.encode(back) == data  # a fixed point: decode/encode changes nothing


def _normalize_quantities(obj: JSON) -> None:
    # a JSON number for a quantity is written as its decimal text
    for c in obj.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
        for kind in ("limits", "requests"):
            for key, value in c.get("resources", {}).get(kind, {}).items():
                c["resources"][kind][key] = str(value)


@pytest.mark.parametrize(("name", "make"), OBJECTS, ids=[n for n, _ in OBJECTS])
def test_protobufs_own_parser_agrees(
    pb: Serializer, classes: Classes, name: str, make: Any
) -> None:
    obj = make()
    envelope = unwrap(pb.encode(obj))
    msg_name = pb.message(envelope.api_version, envelope.kind).name
    parsed = classes[msg_name].FromString(envelope.raw)
    # canonical form: fields in number order, map keys sorted, value fields present
    assert parsed.SerializeToString(deterministic=True) == envelope.raw
    assert parsed.metadata.name == obj["metadata"]["name"]  # type: ignore[attr-defined]


def test_special_types_on_the_wire(pb: Serializer, classes: Classes) -> None:
    dep = classes["k8s.io.api.apps.v1.Deployment"].FromString(unwrap(pb.encode(deployment())).raw)
    rolling = dep.spec.strategy.rollingUpdate  # type: ignore[attr-defined]
    assert (rolling.maxSurge.type, rolling.maxSurge.strVal) == (1, "25%")
    assert (rolling.maxUnavailable.type, rolling.maxUnavailable.intVal) == (0, 1)
    pod_spec = dep.spec.template.spec  # type: ignore[attr-defined]
    assert pod_spec.containers[0].resources.limits["cpu"].string == "500m"
    assert pod_spec.tolerations[0].tolerationSeconds == -1
    assert dep.metadata.creationTimestamp.seconds == 1714979289  # type: ignore[attr-defined]
    assert dep.metadata.creationTimestamp.nanos == 0  # type: ignore[attr-defined]
    assert dep.spec.replicas == 0 and dep.spec.HasField("replicas")  # type: ignore[attr-defined]
    # a zero Time (template creationTimestamp) is an empty message, as Go writes it
    assert pod_spec.containers[0].name == "nginx"
    assert dep.spec.template.metadata.HasField("creationTimestamp")  # type: ignore[attr-defined]
    assert dep.spec.template.metadata.creationTimestamp.ByteSize() == 0  # type: ignore[attr-defined]
    ev = classes["k8s.io.api.core.v1.Event"].FromString(unwrap(pb.encode(events()[0])).raw)
    assert ev.eventTime.nanos == 123456000  # type: ignore[attr-defined]
    sec = classes["k8s.io.api.core.v1.Secret"].FromString(unwrap(pb.encode(secret())).raw)
    assert sec.data["k"] == b"\x00\xffbinary" and sec.data["empty"] == b""  # type: ignore[attr-defined]


def test_go_json_view_of_zero_values(pb: Serializer) -> None:
    back = pb.decode(pb.encode(deployment()))
    assert back["spec"]["template"]["metadata"]["creationTimestamp"] is None
    assert back["spec"]["replicas"] == 0  # a pointer that is set stays, even when zero
    assert back["metadata"]["annotations"] == {"a": ""}
    container = back["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["requests"] == {"cpu": "0.25"}
    assert container["env"][0] == {"name": "A"}  # value "" with omitempty is left out
    assert "status" in pb.decode(pb.encode({"apiVersion": "v1", "kind": "Namespace"}))
    ns = pb.decode(pb.encode({"apiVersion": "v1", "kind": "Namespace"}))
    assert ns == {"apiVersion": "v1", "kind": "Namespace",
                  "metadata": {"creationTimestamp": None}, "spec": {}, "status": {}}  # fmt: skip


def test_envelope_bytes() -> None:
    assert wrap("v1", "Pod", b"") == b'k8s\x00\n\t\n\x02v1\x12\x03Pod\x12\x00\x1a\x00"\x00'
    unknown = unwrap(wrap("apps/v1", "Deployment", b"\x0a\x00"))
    assert (unknown.api_version, unknown.kind, unknown.raw) == ("apps/v1", "Deployment", b"\n\x00")
    assert (unknown.content_type, unknown.content_encoding) == ("", "")
    assert frame(b"abc") == b"\x00\x00\x00\x03abc"
    with pytest.raises(ConversionError, match="expected prefix"):
        unwrap(b'{"kind":"Pod"}')
    with pytest.raises(ConversionError, match="EOF"):
        unwrap(wrap("v1", "Pod", b"\x0a\x05abc")[:-6])


def test_newer_fields_are_reported_not_dropped_silently(pb: Serializer) -> None:
    obj = seed.pod(1, 1, 1)
    obj["spec"]["fieldFrom137"] = {"x": 1}
    report = Report()
    data = pb.encode(obj, report)
    assert report.unknown_json == [".spec.fieldFrom137"]
    envelope = unwrap(data)
    # a field number the 0.32 schema lacks, as a newer kube-apiserver would write it
    raw = envelope.raw + b"\xb8\x3e\x01"  # field 999, varint 1
    report = Report()
    pb.decode(wrap("v1", "Pod", raw), report)
    assert report.unknown_fields == ["k8s.io.api.core.v1.Pod#999"]


def test_wrong_types_and_unknown_kinds(pb: Serializer) -> None:
    with pytest.raises(ConversionError, match=r"\.spec\.replicas: expected a number"):
        pb.encode({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": "x"}})
    with pytest.raises(NotRegistered, match='no kind "Widget" is registered for version'):
        pb.encode({"apiVersion": "example.com/v1", "kind": "Widget"})
    assert pb.knows("v1", "Status") and pb.knows("meta.k8s.io/v1", "PartialObjectMetadata")


def test_durations() -> None:
    for text, nanos in (
        ("0s", 0),
        ("1h0m0s", 3600 * 10**9),
        ("1.5s", 1_500_000_000),
        ("300ms", 300_000_000),
        ("-2m3s", -123 * 10**9),
        ("1µs", 1000),
    ):
        assert parse_duration(text) == nanos
        assert format_duration(nanos) == text
    assert parse_duration("1h30m") == 5400 * 10**9
    with pytest.raises(ConversionError):
        parse_duration("soon")


@pytest.mark.parametrize(("name", "make"), OBJECTS, ids=[n for n, _ in OBJECTS])
def test_generated_code_agrees_with_the_reference(pb: Serializer, name: str, make: Any) -> None:
    obj = make()
    msg = pb.message(obj["apiVersion"], obj["kind"])
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    raw = converter.encode(msg, body, Report())
    assert pb.compiler.encoder(msg)(body, Report(), "", False) == raw
    assert pb.compiler.decoder(msg)(raw, Report()) == converter.decode(msg, raw, Report())


def test_storage_codec_reads_protobuf_as_json(pb: Serializer) -> None:
    obj = seed.pod(3, 2, 2)
    value = pb.encode(obj)
    first = codec.decode("/registry/pods/a/b", value, 42)
    again = codec.decode("/registry/pods/a/b", bytes(value), 43)  # decoded once, spliced
    assert first.obj["metadata"]["resourceVersion"] == "42"
    assert again.obj["metadata"]["resourceVersion"] == "43"
    assert again.obj["spec"] == first.obj["spec"] == pb.decode(value)["spec"]
    kept = codec.decode("/registry/pods/a/b", value, 44, keep_obj=True)
    assert kept.obj["metadata"]["name"] == obj["metadata"]["name"]
    assert codec.decode_object("/k", value)["kind"] == "Pod"


def _ld(number: int, payload: bytes) -> bytes:
    assert len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


def _enveloped(kind: str, raw: bytes) -> bytes:
    type_meta = _ld(1, b"v1") + _ld(2, kind.encode())
    return b"k8s\x00" + _ld(1, type_meta) + _ld(2, raw) + _ld(3, b"") + _ld(4, b"")


@pytest.mark.parametrize(
    "value",
    [
        # Pod.spec.containers[0].resources.limits["cpu"]: a map value (a Quantity
        # message) that comes as a varint
        _enveloped(
            "Pod", _ld(2, _ld(2, _ld(1, b"c") + _ld(8, _ld(1, _ld(1, b"cpu") + b"\x10\x01"))))
        ),
        # Pod.spec.containers[0].resources.limits["cpu"]: a Quantity that is not UTF-8
        _enveloped(
            "Pod",
            _ld(2, _ld(2, _ld(1, b"c") + _ld(8, _ld(1, _ld(1, b"cpu") + _ld(2, _ld(1, b"\xff")))))),
        ),
    ],
    ids=["map-value-wire-type", "quantity-not-utf8"],
)
def test_well_formed_wire_data_json_cannot_hold_is_a_corrupt_object(value: bytes) -> None:
    """What the storage decoder raises for them (the cache skips CorruptObject; anything
    else would stop its reflector)."""
    with pytest.raises(CorruptObject):
        codec.decode_object("/registry/x", value, 7)


@pytest.mark.parametrize(("name", "make"), OBJECTS, ids=[n for n, _ in OBJECTS])
def test_resource_version_splice(pb: Serializer, name: str, make: Any) -> None:
    obj = make()
    stored = pb.encode(obj)  # as in etcd: no resourceVersion
    with_rv = copy.deepcopy(obj)
    with_rv["metadata"]["resourceVersion"] = "98765"
    assert with_resource_version(stored, 98765) == pb.encode(with_rv)
    assert with_resource_version(pb.encode(with_rv), 5) == pb.encode(
        {**with_rv, "metadata": {**with_rv["metadata"], "resourceVersion": "5"}}
    )
    assert with_resource_version(b'{"kind":"Pod"}', 5) is None


def test_a_write_reads_back_as_protobuf_normalises_it() -> None:
    protobuf = codec.codec_for("application/vnd.kubernetes.protobuf")
    obj = seed.pod(4, 1, 1)
    obj["metadata"]["creationTimestamp"] = "2024-01-01T00:00:00.5Z"  # Time keeps seconds
    obj["spec"]["activeDeadlineSeconds"] = None  # a null pointer is no value
    value = protobuf.encode(obj)
    assert value.startswith(MAGIC)
    stored = codec.stored_from_encoded("/registry/pods/a/b", value, 9, copy.deepcopy(obj))
    assert stored.obj == orjson.loads(stored.data)  # the dict is what the bytes say
    assert stored.obj["metadata"]["creationTimestamp"] == "2024-01-01T00:00:00Z"
    assert "activeDeadlineSeconds" not in stored.obj["spec"]
    assert stored.data == codec.decode("/registry/pods/a/b", value, 9).data  # as a re-read
    # what protobuf cannot carry stays JSON, whole
    obj["spec"]["fieldFrom137"] = True
    assert protobuf.encode(obj).startswith(b"{")


@pytest.mark.parametrize(
    "seconds",
    [0, 59, 86399, 86400, 1_700_000_000, 951_782_400, -1, -86401, -62_135_596_800 + 1,
     253_402_300_799],
)  # fmt: skip
def test_compiled_time_formatting_is_the_interpreters(seconds: int) -> None:
    assert codegen._format_seconds(seconds) == converter._format_time(seconds, None)


def test_every_truncation_of_a_pod_is_a_conversion_error_or_the_references_answer(
    pb: Serializer,
) -> None:
    # the compiled decoder reads one- and two-byte tags and lengths inline
    msg = pb.message("v1", "Pod")
    raw = pb.encode_raw("v1", "Pod", {k: v for k, v in seed.pod(4, 3, 2).items()
                                      if k not in ("apiVersion", "kind")})  # fmt: skip
    for n in range(len(raw)):
        try:
            got = pb.decode_raw("v1", "Pod", raw[:n])
        except ConversionError:
            with pytest.raises((ConversionError, WireError, IndexError, ValueError)):
                converter.decode(msg, raw[:n], Report())
            continue
        assert got == {"apiVersion": "v1", "kind": "Pod",
                       **converter.decode(msg, raw[:n], Report())}  # fmt: skip


def test_ephemeral_container_fields_are_inline(pb: Serializer) -> None:
    """EphemeralContainer embeds EphemeralContainerCommon with a protobuf tag that names
    no field (``bytes,1,req``): its fields still sit in the container's JSON object, so
    ``kubectl debug`` (protobuf) finds the container it added by name."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"},
           "spec": {"containers": [{"name": "a", "image": "x"}],
                    "ephemeralContainers": [{"name": "dbg", "image": "busybox", "stdin": True,
                                             "targetContainerName": "a"}]}}  # fmt: skip
    (ephemeral,) = pb.decode(pb.encode(pod))["spec"]["ephemeralContainers"]
    assert ephemeral == {"name": "dbg", "image": "busybox", "resources": {}, "stdin": True,
                         "targetContainerName": "a"}  # fmt: skip
