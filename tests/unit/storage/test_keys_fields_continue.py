"""Key layout, selectable fields and continue tokens (pure functions)."""

from __future__ import annotations

import base64

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage import keys
from storage.continue_token import decode_continue, encode_continue
from storage.errors import InvalidContinue
from storage.fields import attrs_func, selectable_fields, validate_field_selector
from storage.selectors import SelectorError, parse_field_selector

# ---------------------------------------------------------------------------- keys


@pytest.mark.parametrize(
    ("group", "resource", "path"),
    [
        ("", "pods", "pods"),
        ("", "services", "services/specs"),
        ("", "endpoints", "services/endpoints"),
        ("", "nodes", "minions"),
        ("", "replicationcontrollers", "controllers"),
        ("networking.k8s.io", "ingresses", "ingress"),
        ("extensions", "ingresses", "ingress"),
        ("apps", "deployments", "deployments"),
        ("rbac.authorization.k8s.io", "clusterroles", "clusterroles"),
        (
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            "apiextensions.k8s.io/customresourcedefinitions",
        ),
        ("example.com", "widgets", "example.com/widgets"),
        ("example.com", "nodes", "example.com/nodes"),
    ],
)
def test_storage_path(group: str, resource: str, path: str) -> None:
    assert keys.storage_path(group, resource) == path


def test_keys() -> None:
    assert keys.resource_prefix("", "pods") == "/registry/pods/"
    assert keys.resource_prefix("", "pods", "/t-1/registry/") == "/t-1/registry/pods/"
    assert keys.resource_prefix("", "pods", "registry") == "/registry/pods/"
    assert keys.namespace_prefix("apps", "deployments", "ns") == "/registry/deployments/ns/"
    assert keys.object_key("apps", "deployments", "x", "ns") == "/registry/deployments/ns/x"
    assert keys.object_key("", "nodes", "n1") == "/registry/minions/n1"
    assert keys.split_object_key("/registry/pods/ns/x", "/registry/pods/") == ("ns", "x")
    assert keys.split_object_key("/registry/minions/n1", "/registry/minions/") == ("", "n1")
    with pytest.raises(ValueError):
        keys.split_object_key("/registry/pods/ns/x", "/registry/nodes/")


# ---------------------------------------------------------------------------- fields


def test_pod_fields() -> None:
    get = attrs_func("pods")
    labels, fields = get(
        {
            "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "web"}},
            "spec": {"nodeName": "n1", "hostNetwork": True, "restartPolicy": "Always"},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}]},
        }
    )
    assert labels == {"app": "web"}
    assert fields["metadata.name"] == "p"
    assert fields["metadata.namespace"] == "ns"
    assert fields["spec.nodeName"] == "n1"
    assert fields["spec.hostNetwork"] == "true"
    assert fields["status.podIP"] == "10.0.0.1"
    assert fields["spec.schedulerName"] == ""
    _, empty = get({"metadata": {"name": "q"}})
    assert empty["spec.hostNetwork"] == "false"
    assert empty["metadata.namespace"] == ""


@pytest.mark.parametrize(
    ("resource", "obj", "field", "value"),
    [
        ("nodes", {"spec": {"unschedulable": True}}, "spec.unschedulable", "true"),
        ("nodes", {}, "spec.unschedulable", "false"),
        ("secrets", {"type": "Opaque"}, "type", "Opaque"),
        ("namespaces", {"status": {"phase": "Active"}}, "status.phase", "Active"),
        ("events", {"involvedObject": {"kind": "Pod"}}, "involvedObject.kind", "Pod"),
        ("events", {"source": {"component": "kubelet"}}, "source", "kubelet"),
        ("events", {"reportingComponent": "ctl"}, "source", "ctl"),
        ("replicasets", {"status": {"replicas": 3}}, "status.replicas", "3"),
        ("jobs", {}, "status.successful", "0"),
        ("certificatesigningrequests", {"spec": {"signerName": "s"}}, "spec.signerName", "s"),
    ],
)
def test_resource_fields(resource: str, obj: dict[str, object], field: str, value: str) -> None:
    assert attrs_func(resource)(obj)[1][field] == value


def test_validate_field_selector() -> None:
    validate_field_selector("pods", parse_field_selector("spec.nodeName=n1,metadata.name=x"))
    assert "spec.unschedulable" in selectable_fields("nodes")
    with pytest.raises(SelectorError, match=r"^field label not supported: spec.nodeName$"):
        validate_field_selector("configmaps", parse_field_selector("spec.nodeName=n1"))


# ---------------------------------------------------------------------------- continue


def _raw(token: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(token)).rstrip(b"=").decode()


def test_continue_format_matches_upstream() -> None:
    token = encode_continue("/registry/pods/ns/b\x00", "/registry/pods/", 12)
    padded = token + "=" * (-len(token) % 4)
    assert "=" not in token
    assert orjson.loads(base64.urlsafe_b64decode(padded)) == {
        "v": "meta.k8s.io/v1",
        "rv": 12,
        "start": "ns/b\x00",
    }
    assert decode_continue(token, "/registry/pods/") == ("/registry/pods/ns/b\x00", 12)


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (
            "!!!",
            "invalid continue token: continue key is not valid: "
            "illegal base64 data at input byte 0",
        ),
        (
            _raw({"v": "meta.k8s.io/v1", "rv": 0, "start": "a"}),
            "invalid continue token: continue key is not valid: incorrect encoded start "
            "resourceVersion (version meta.k8s.io/v1)",
        ),
        (
            _raw({"v": "meta.k8s.io/v1", "rv": 3, "start": ""}),
            "invalid continue token: continue key is not valid: encoded start key empty "
            "(version meta.k8s.io/v1)",
        ),
        (
            _raw({"v": "v2", "rv": 3, "start": "a"}),
            "invalid continue token: continue key is not valid: server does not recognize this "
            "encoded version v2",
        ),
        (
            _raw({"v": "meta.k8s.io/v1", "rv": 3, "start": "../secrets/x"}),
            "invalid continue token: continue key is not valid: ../secrets/x",
        ),
        (
            _raw({"v": "meta.k8s.io/v1", "rv": 3, "start": "a/./b"}),
            "invalid continue token: continue key is not valid: a/./b",
        ),
    ],
)
def test_continue_errors(token: str, message: str) -> None:
    with pytest.raises(InvalidContinue) as err:
        decode_continue(token, "/registry/pods/")
    assert err.value.message == message


def test_continue_not_json() -> None:
    token = base64.urlsafe_b64encode(b"nope").rstrip(b"=").decode()
    with pytest.raises(
        InvalidContinue, match=r"^invalid continue token: continue key is not valid: "
    ):
        decode_continue(token, "/p/")


def test_encode_outside_prefix() -> None:
    with pytest.raises(ValueError, match="the key and key prefix do not match"):
        encode_continue("/registry/nodes/x", "/registry/pods/", 1)


_segment = st.text(
    st.characters(min_codepoint=33, max_codepoint=0x2FF, exclude_characters="/."),
    min_size=1,
    max_size=6,
)


@given(
    st.lists(_segment, min_size=1, max_size=3),
    st.one_of(st.just(-1), st.integers(1, 2**62)),
)
def test_continue_round_trip(segments: list[str], rv: int) -> None:
    prefix = "/t-1/registry/pods/"
    key = prefix + "/".join(segments) + "\x00"
    assert decode_continue(encode_continue(key, prefix, rv), prefix) == (key, rv)
