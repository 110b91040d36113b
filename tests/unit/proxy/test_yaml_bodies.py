"""YAML request bodies (proxy/endpoints/decoding.py) decoded with libyaml's parser: the
values are those of PyYAML's pure-Python safe loader, which the server used before
(the same YAML 1.1 resolver and constructor), pinned here case by case; where a value
has no JSON form, and for syntax errors, the answers are sigs.k8s.io/yaml's
(``YAMLToJSON`` of the v1.32 oracle's vendored copy, run on each input)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from proxy.endpoints import decoding


def _decode(body: bytes) -> Any:
    return decoding.decode_structured(body, "application/yaml")


def test_the_installed_pyyaml_has_libyaml() -> None:
    assert yaml.__with_libyaml__
    assert issubclass(decoding._CountingLoader, yaml.CSafeLoader)


# YAML 1.1 as before, each the same as go-yaml's but the four marked
SAME_AS_BEFORE = [
    (b"a: yes", True), (b"a: on", True), (b"a: Off", False), (b"a: TRUE", True),
    (b"a: y", "y"),  # go-yaml: true
    (b"a: 0777", 511), (b"a: 012345", 5349), (b"a: 0x1F", 31), (b"a: 0b101", 5),
    (b"a: 0o777", "0o777"),  # go-yaml: 511
    (b"a: 09", "09"),  # go-yaml: 9
    (b"a: 1_000", 1000), (b"a: 0xFF_FF", 65535), (b"a: +12", 12), (b"a: -0", 0),
    (b"a: 1:20", 80),  # go-yaml: "1:20" (sexagesimal is YAML 1.1, not go-yaml)
    (b"a: 12345678901234567890", 12345678901234567890),
    (b"a: .5", 0.5), (b"a: 1.0", 1.0), (b"a: 1e3", "1e3"), (b"a: 1.2.3", "1.2.3"),
    (b"a: ~", None), (b"a: Null", None), (b"a: !!str 5", "5"), (b"a: !!int '5'", 5),
    (b"a: 1\na: 2", 2), (b"a: {b: 1, b: 2}", {"b": 2}),  # the last duplicate wins
    (b"<<: {b: 1}\nc: 2", None), (b"a: &x 1\nb: *x", 1),
]  # fmt: skip


@pytest.mark.parametrize(("body", "value"), SAME_AS_BEFORE)
def test_values_are_the_pure_python_loaders(body: bytes, value: Any) -> None:
    before = yaml.load(body, Loader=yaml.SafeLoader)
    decoded = _decode(body)
    assert decoded == before
    if body.startswith(b"<<"):
        assert decoded == {"b": 1, "c": 2}
    else:
        assert decoded["a"] == value and type(decoded["a"]) is type(value)


# what JSON cannot hold, as YAMLToJSON converts it (was a Python value no JSON encoder
# takes, or a null where Go refuses the value)
AS_YAML_TO_JSON = [
    (b"on: 1", {"true": 1}),
    (b"1: a", {"1": "a"}),
    (b"1.5: a", {"1.5": "a"}),
    (b"a: !!binary aGVsbG8=", {"a": "hello"}),
    (b"a: =", {"a": "="}),
    (b"a: <<", {"a": "<<"}),
    (b"a: 2001-12-14", {"a": "2001-12-14"}),  # was a date, written the same
    (b"a: 2001-12-14t21:59:43.10-05:00", {"a": "2001-12-14t21:59:43.10-05:00"}),
    (b"a: 1\n---\nb: 2", {"a": 1}),  # the first document only
    (b"", None),
    (b"---", None),
]


@pytest.mark.parametrize(("body", "value"), AS_YAML_TO_JSON)
def test_values_json_cannot_hold_are_converted_as_yaml_to_json(body: bytes, value: Any) -> None:
    assert _decode(body) == value


GO_ERRORS = [
    (b"a: .inf", "json: unsupported value: +Inf"),
    (b"a: -.Inf", "json: unsupported value: -Inf"),
    (b"a: .nan", "json: unsupported value: NaN"),
    (b"a: [1, 2\nb: 3", "yaml: line 1: did not find expected ',' or ']'"),
    (b"\xff: 1", "yaml: invalid leading UTF-8 octet"),
    (b"a: b: c", "yaml: mapping values are not allowed in this context"),
    (b"a:\n  - 1\n - 2", "yaml: line 2: did not find expected key"),
    (b"\x00a: 1", "yaml: control characters are not allowed"),
    (b"{a: 1", "yaml: line 1: did not find expected ',' or '}'"),
    (b"a: 'x", "yaml: found unexpected end of stream"),
    (b"a: &a [*a, *a]", "yaml: anchor 'a' value contains itself"),
    (b"a: *nope", "yaml: unknown anchor 'nope' referenced"),
    (b"- a\nb: c", "yaml: line 1: did not find expected '-' indicator"),
    (b"a:\n  b: 1\n c: 2", "yaml: line 2: did not find expected key"),
    (b"\ta: 1", "yaml: found character that cannot start any token"),
    (b'a: "\\xZZ"', "yaml: did not find expected hexdecimal number"),
    (b"a: @x", "yaml: found character that cannot start any token"),
]


@pytest.mark.parametrize(("body", "message"), GO_ERRORS)
def test_errors_are_worded_as_go_yaml(body: bytes, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        _decode(body)
    assert str(raised.value) == message


def test_heavy_yaml_bodies_are_told_apart_by_their_separators() -> None:
    """Which pool a body is decoded in (``is_heavy``): many nodes, not many bytes."""
    many_nodes = b"x: [" + b"0," * 20_000 + b"0]"
    long_string = b"data: {k: " + b"x" * 200_000 + b"}"
    assert decoding.is_heavy(many_nodes, "application/yaml")
    assert not decoding.is_heavy(long_string, "application/yaml")
    assert not decoding.is_heavy(many_nodes, "application/json")
    assert decoding.is_heavy(b" " * (decoding.HUGE_BODY + 1), "application/json")
