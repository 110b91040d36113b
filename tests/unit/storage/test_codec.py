"""The storage codec: canonical encoding, resourceVersion splice, fallbacks."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage import codec
from storage.errors import CorruptObject
from storage.interfaces import JSONObject


def pod(**extra: object) -> JSONObject:
    return {
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]},
        "metadata": {"name": "p", "namespace": "ns", "labels": {"b": "2", "a": "1"}},
        "kind": "Pod",
        "apiVersion": "v1",
        **extra,
    }


def test_encode_puts_type_and_metadata_first_and_drops_rv_and_selflink() -> None:
    obj = pod()
    obj["metadata"]["resourceVersion"] = "17"
    obj["metadata"]["selfLink"] = "/api/v1/x"
    data = codec.encode(obj)
    assert data.startswith(b'{"apiVersion":"v1","kind":"Pod","metadata":{')
    decoded = orjson.loads(data)
    assert "resourceVersion" not in decoded["metadata"]
    assert "selfLink" not in decoded["metadata"]
    assert obj["metadata"]["resourceVersion"] == "17"  # not mutated
    assert list(decoded) == ["apiVersion", "kind", "metadata", "spec"]


def test_encode_is_independent_of_key_order() -> None:
    a = pod(status={"phase": "Running", "conditions": []})
    b = orjson.loads(orjson.dumps(a, option=orjson.OPT_SORT_KEYS))
    b["metadata"] = dict(reversed(list(b["metadata"].items())))
    assert codec.encode(a) == codec.encode(b)


def test_decode_splices_resource_version_into_canonical_bytes() -> None:
    data = codec.encode(pod())
    stored = codec.decode("/registry/pods/ns/p", data, 42)
    assert stored.resource_version == 42
    assert stored.data.startswith(
        b'{"apiVersion":"v1","kind":"Pod","metadata":{"resourceVersion":"42",'
    )
    assert orjson.loads(stored.data)["metadata"]["resourceVersion"] == "42"
    assert stored.obj["metadata"]["resourceVersion"] == "42"
    assert codec.splice_resource_version(data, 42) == stored.data


def test_decode_empty_metadata() -> None:
    data = codec.encode({"apiVersion": "v1", "kind": "X", "metadata": {}})
    stored = codec.decode("k", data, 5)
    assert orjson.loads(stored.data) == {
        "apiVersion": "v1",
        "kind": "X",
        "metadata": {"resourceVersion": "5"},
    }


@pytest.mark.parametrize(
    "value",
    [
        # foreign key order (as kube-apiserver's JSON serializer writes it)
        b'{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","resourceVersion":"3"}}',
        # a nested resourceVersion would be duplicated by a blind splice
        b'{"apiVersion":"v1","kind":"Event","metadata":{"name":"e"},'
        b'"involvedObject":{"resourceVersion":"9"}}',
        # no metadata at all
        b'{"apiVersion":"v1","kind":"X"}',
        # tricky strings
        b'{"apiVersion":"v\\"1","kind":"\\\\","metadata":{"name":"p"}}',
    ],
)
def test_decode_falls_back_for_non_canonical_values(value: bytes) -> None:
    stored = codec.decode("k", value, 8)
    obj = orjson.loads(stored.data)
    assert obj["metadata"]["resourceVersion"] == "8"
    expected = orjson.loads(value)
    expected.setdefault("metadata", {})["resourceVersion"] = "8"
    assert obj == expected


@pytest.mark.parametrize("value", [b"", b"{", b"[1,2]", b"k8s\x00\x0a\x02", b'{"metadata":3}'])
def test_undecodable_values_raise_corrupt_object(value: bytes) -> None:
    with pytest.raises(CorruptObject) as err:
        codec.decode("/registry/pods/ns/p", value, 1)
    assert err.value.key == "/registry/pods/ns/p" and err.value.revision == 1
    assert err.value.message.startswith(
        "StorageError: corrupt object, Code: 7, Key: /registry/pods/ns/p, ResourceVersion: 0, "
        "AdditionalErrorMsg: object not decodable revision=1: "
    )


def test_with_resource_version_reencodes_a_stored_version() -> None:
    stored = codec.decode("k", codec.encode(pod()), 3)
    moved = codec.with_resource_version(stored, 9)
    assert moved.resource_version == 9 and moved.key == "k"
    assert orjson.loads(moved.data)["metadata"]["resourceVersion"] == "9"


def test_stored_from_encoded_sets_rv_on_given_obj() -> None:
    obj = pod()
    data = codec.encode(obj)
    stored = codec.stored_from_encoded("k", data, 9, obj)
    assert stored.obj is obj
    assert obj["metadata"]["resourceVersion"] == "9"
    assert orjson.loads(stored.data) == orjson.loads(orjson.dumps(obj))


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=10,
)


@given(
    st.dictionaries(st.text(max_size=6), _json, max_size=4),
    st.dictionaries(st.text(max_size=6), _json, max_size=4),
    st.text(max_size=4),
    st.integers(1, 2**40),
)
def test_decode_equals_slow_path(
    meta: dict[str, object], rest: dict[str, object], kind: str, rv: int
) -> None:
    obj: dict[str, object] = {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": meta,
        **{k: v for k, v in rest.items() if k not in ("apiVersion", "kind", "metadata")},
    }
    data = codec.encode(obj)
    stored = codec.decode("k", data, rv)
    expected = orjson.loads(data)
    expected["metadata"]["resourceVersion"] = str(rv)
    expected["metadata"].pop("selfLink", None)
    assert orjson.loads(stored.data) == expected
    assert codec.encode(orjson.loads(stored.data)) == data
