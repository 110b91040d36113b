"""Label and field selectors: grammar, upstream error messages, and properties
(str/parse round-trip; matches agrees with a reference evaluation)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    escape_field_value,
    parse_field_selector,
    parse_label_selector,
)

# ---------------------------------------------------------------------------- labels


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("", {"a": "1"}, True),
        ("a=1", {"a": "1"}, True),
        ("a==1", {"a": "1"}, True),
        ("a=1", {"a": "2"}, False),
        ("a=1", {}, False),
        ("a!=1", {}, True),
        ("a!=1", {"a": "1"}, False),
        ("a in (1,2)", {"a": "2"}, True),
        ("a in (1,2)", {"a": "3"}, False),
        ("a notin (1,2)", {"a": "3"}, True),
        ("a notin (1,2)", {}, True),
        ("a notin (1,2)", {"a": "1"}, False),
        ("a", {"a": ""}, True),
        ("a", {"b": "x"}, False),
        ("!a", {"b": "x"}, True),
        ("!a", {"a": "x"}, False),
        ("a=1,b", {"a": "1", "b": "2"}, True),
        ("a=1,b", {"a": "1"}, False),
        ("a>5", {"a": "6"}, True),
        ("a>5", {"a": "5"}, False),
        ("a<5", {"a": "-1"}, True),
        ("a<5", {"a": "x"}, False),
        ("a in ()", {"a": ""}, True),
        ("  a  =  1  ,  b  in  ( x , y )  ", {"a": "1", "b": "y"}, True),
        ("x in (foo,,baz),y,z notin ()", {"x": "", "y": "1"}, True),
        ("a=", {"a": ""}, True),
        ("app.kubernetes.io/name=web", {"app.kubernetes.io/name": "web"}, True),
        ("a in (in,notin)", {"a": "notin"}, True),
    ],
)
def test_label_matches(selector: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_label_selector(selector).matches(labels) is expected


@pytest.mark.parametrize(
    ("selector", "normalized"),
    [
        ("b=1,a=2", "a=2,b=1"),
        ("a in (z,y,x)", "a in (x,y,z)"),
        ("!a", "!a"),
        ("a==1", "a==1"),
        ("a notin (x)", "a notin (x)"),
        ("a>1", "a>1"),
        ("", ""),
    ],
)
def test_label_str_is_normalized(selector: str, normalized: str) -> None:
    assert str(parse_label_selector(selector)) == normalized


QNAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("a=1,", "found '', expected: identifier after ','"),
        ("a=1 b=2", "found 'b', expected: ',' or 'end of string'"),
        ("=a", "found '=', expected: !, identifier, or 'end of string'"),
        ("a in 1", "unable to parse requirement: found '1' expected: '('"),
        ("a in (1", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
        ("a=(", "unable to parse requirement: found '(', expected: identifier"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        ("-a", f'unable to parse requirement: <nil>: Invalid value: "-a": {QNAME_MSG}'),
        ("a=-b", f'unable to parse requirement: values[0][a]: Invalid value: "-b": {VALUE_MSG}'),
        (
            "a/b/c",
            'unable to parse requirement: <nil>: Invalid value: "a/b/c": a qualified name must '
            "consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
            "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
            "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS "
            "subdomain prefix and '/' (e.g. 'example.com/MyName')",
        ),
        (
            "/a",
            'unable to parse requirement: <nil>: Invalid value: "/a": '
            "prefix part must be non-empty",
        ),
        (
            "a" * 64,
            f'unable to parse requirement: <nil>: Invalid value: "{"a" * 64}": '
            "name part must be no more than 63 characters",
        ),
        (
            "a>x",
            'unable to parse requirement: values[0]: Invalid value: "x": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        ("a=!", "unable to parse requirement: found '!', expected: identifier"),
    ],
)
def test_label_errors_carry_upstream_messages(selector: str, message: str) -> None:
    with pytest.raises(SelectorError) as err:
        parse_label_selector(selector)
    assert str(err.value) == message
    assert isinstance(err.value, ValueError)


def test_label_requires_exact_match() -> None:
    sel = parse_label_selector("a=1,b in (x),c in (x,y),d!=1")
    assert sel.requires_exact_match("a") == "1"
    assert sel.requires_exact_match("b") == "x"
    assert sel.requires_exact_match("c") is None
    assert sel.requires_exact_match("d") is None
    assert sel.requires_exact_match("z") is None


# ---------------------------------------------------------------------------- fields


@pytest.mark.parametrize(
    ("selector", "fields", "expected"),
    [
        ("", {}, True),
        ("spec.nodeName=n1", {"spec.nodeName": "n1"}, True),
        ("spec.nodeName==n1", {"spec.nodeName": "n2"}, False),
        ("spec.nodeName!=n1", {"spec.nodeName": "n2"}, True),
        ("spec.nodeName=", {}, True),
        ("spec.nodeName!=", {}, False),
        ("a=1,b!=2", {"a": "1", "b": "3"}, True),
        (r"a=x\,y\=z\\", {"a": "x,y=z\\"}, True),
    ],
)
def test_field_matches(selector: str, fields: dict[str, str], expected: bool) -> None:
    assert parse_field_selector(selector).matches(fields) is expected


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("abc", "invalid selector: 'abc'; can't understand 'abc'"),
        ("a=1,b", "invalid selector: 'a=1,b'; can't understand 'b'"),
        (r"a=\x", "invalid field selector: invalid escape sequence: \\x"),
        ("a=b\\", "invalid field selector: invalid escape sequence: \\"),
        ("a=b=c", "invalid field selector: unescaped character in value: 61"),
    ],
)
def test_field_errors(selector: str, message: str) -> None:
    with pytest.raises(SelectorError) as err:
        parse_field_selector(selector)
    assert str(err.value) == message


def test_field_selector_api() -> None:
    sel = parse_field_selector("spec.nodeName=n1,status.phase!=Running")
    assert not sel.empty and parse_field_selector("").empty
    assert sel.requires_exact_match("spec.nodeName") == "n1"
    assert sel.requires_exact_match("status.phase") is None
    assert sel.fields() == {"spec.nodeName", "status.phase"}
    assert str(sel) == "spec.nodeName=n1,status.phase!=Running"
    assert str(parse_field_selector("b==1,a=2")) == "a=2,b=1"


# ---------------------------------------------------------------------------- properties

_alnum = st.sampled_from("abz09")
_names = st.one_of(
    _alnum,
    st.builds(lambda a, mid, b: a + mid + b, _alnum, st.text("a0._-", max_size=4), _alnum),
)
_keys = st.one_of(
    _names, st.builds(lambda p, n: f"{p}.io/{n}", st.text("abc", min_size=1, max_size=3), _names)
)
_values = st.one_of(st.just(""), _names)
_label_sets = st.dictionaries(st.sampled_from(["a", "b", "x.io/c", "in"]), _values, max_size=3)


@st.composite
def _requirement_texts(draw: st.DrawFn) -> tuple[str, str, list[str]]:
    key = draw(st.one_of(_keys, st.sampled_from(["a", "b", "x.io/c", "in"])))
    op = draw(st.sampled_from(["=", "==", "!=", "in", "notin", "", "!", ">", "<"]))
    if op in ("in", "notin"):
        values = draw(st.lists(_values, min_size=1, max_size=3))
        return f"{key} {op} ({','.join(values)})", op, [key, *values]
    if op == "":
        return key, "exists", [key]
    if op == "!":
        return f"!{key}", "!", [key]
    if op in (">", "<"):
        n = draw(st.integers(0, 100))  # "-1" is no valid label value
        return f"{key}{op}{n}", op, [key, str(n)]
    value = draw(_values)
    return f"{key}{op}{value}", op, [key, value]


def _reference(op: str, args: list[str], labels: dict[str, str]) -> bool:
    key, values = args[0], args[1:]
    has = key in labels
    if op in ("=", "==", "in"):
        return has and labels[key] in values
    if op in ("!=", "notin"):
        return not has or labels[key] not in values
    if op == "exists":
        return has
    if op == "!":
        return not has
    if not has:
        return False
    try:
        have = int(labels[key])
    except ValueError:
        return False
    return have > int(values[0]) if op == ">" else have < int(values[0])


@given(st.lists(_requirement_texts(), max_size=4), _label_sets)
def test_label_matches_agrees_with_reference(
    reqs: list[tuple[str, str, list[str]]], labels: dict[str, str]
) -> None:
    sel = parse_label_selector(",".join(text for text, _, _ in reqs))
    expected = all(_reference(op, args, labels) for _, op, args in reqs)
    assert sel.matches(labels) is expected


@given(st.lists(_requirement_texts(), max_size=4))
def test_label_str_round_trips(reqs: list[tuple[str, str, list[str]]]) -> None:
    sel = parse_label_selector(",".join(text for text, _, _ in reqs))
    again = parse_label_selector(str(sel))
    assert isinstance(again, LabelSelector)
    assert again == sel
    assert str(again) == str(sel)


_field_values = st.text(alphabet=st.sampled_from("ab,=\\ .-"), max_size=6)
_field_terms = st.tuples(st.sampled_from(["f", "spec.x", "g"]), st.booleans(), _field_values)


@given(
    st.lists(_field_terms, max_size=4), st.dictionaries(st.sampled_from(["f", "g"]), _field_values)
)
def test_field_selector_round_trips_and_matches(
    terms: list[tuple[str, bool, str]], fields: dict[str, str]
) -> None:
    text = ",".join(f"{f}{'!=' if neg else '='}{escape_field_value(v)}" for f, neg, v in terms)
    sel = parse_field_selector(text)
    assert isinstance(sel, FieldSelector)
    assert sorted(map(str, sel.terms)) == sorted(map(str, parse_field_selector(str(sel)).terms))
    expected = all(
        (fields.get(f, "") != v) if neg else (fields.get(f, "") == v) for f, neg, v in terms
    )
    assert sel.matches(fields) is expected
