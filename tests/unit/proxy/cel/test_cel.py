"""The CEL engine against cel-go's and Kubernetes' library tests (upstream's expected
results and error texts quoted per case: k8s.io/apiserver/pkg/cel/library/*_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from proxy import cel

SELF = {"self": cel.DYN}

RESULTS: list[tuple[str, Any, Any]] = [
    # lists_test.go
    ("[1, 2, 3].isSorted()", None, True),
    ("[3, 1].isSorted()", None, False),
    ("['a', 'b'].isSorted()", None, True),
    ("[1, 2, 3].sum()", None, 6),
    ("[].sum()", None, 0),
    ("[3, 1, 2].min()", None, 1),
    ("[3, 1, 2].max()", None, 3),
    ("[1, 2, 2, 3].indexOf(2)", None, 1),
    ("[1, 2, 2, 3].lastIndexOf(2)", None, 2),
    ("[1, 2].indexOf(9)", None, -1),
    # regex_test.go
    ("'abc 123'.find('[0-9]+')", None, "123"),
    ("'abc'.find('[0-9]+')", None, ""),
    ("'123 abc 456'.findAll('[0-9]+')", None, ["123", "456"]),
    ("'123 abc 456'.findAll('[0-9]+', 1)", None, ["123"]),
    # cel-go ext strings
    ("'hello'.charAt(1)", None, "e"),
    ("'hello'.indexOf('l')", None, 2),
    ("'hello'.lastIndexOf('l')", None, 3),
    ("'TacoCat'.lowerAscii()", None, "tacocat"),
    ("'TacoCat'.upperAscii()", None, "TACOCAT"),
    ("'a,b,c'.split(',')", None, ["a", "b", "c"]),
    ("'hello'.substring(1, 3)", None, "el"),
    ("'  x  '.trim()", None, "x"),
    ("['a', 'b'].join('-')", None, "a-b"),
    ("'aaa'.replace('a', 'b', 2)", None, "bba"),
    # url_test.go
    ("url('https://example.com:80/path?k=v').getScheme()", None, "https"),
    ("url('https://example.com:80/path').getHost()", None, "example.com:80"),
    ("url('https://[::1]:80/path').getHostname()", None, "::1"),
    ("url('https://example.com:80/path').getPort()", None, "80"),
    ("url('https://example.com/a%20b').getEscapedPath()", None, "/a%20b"),
    ("url('https://example.com/?k=a&k=b').getQuery()", None, {"k": ["a", "b"]}),
    ("isURL('not a url')", None, False),
    ("isURL('/absolute-path')", None, True),
    # quantity_test.go
    ("quantity('50M').isGreaterThan(quantity('50Mi'))", None, False),
    ("quantity('50Mi').isGreaterThan(quantity('50M'))", None, True),
    ("quantity('1').isLessThan(quantity('1001m'))", None, True),
    ("quantity('50k').asInteger()", None, 50000),
    ("quantity('50.5').isInteger()", None, False),
    ("quantity('1').compareTo(quantity('1000m'))", None, 0),
    ("quantity('-5').sign()", None, -1),
    ("isQuantity('20')", None, True),
    ("isQuantity('20 ')", None, False),
    ("quantity('50k').add(quantity('20')).asInteger()", None, 50020),
    # ip_test.go / cidr_test.go
    ("isIP('1.2.3.4')", None, True),
    ("isIP('::ffff:1.2.3.4')", None, False),
    ("ip('1.2.3.4').family()", None, 4),
    ("ip('::1').isLoopback()", None, True),
    ("cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))", None, True),
    ("cidr('192.168.0.0/24').containsIP('192.168.1.1')", None, False),
    ("cidr('192.168.0.0/16').containsCIDR('192.168.10.0/24')", None, True),
    ("cidr('192.168.0.0/24').prefixLength()", None, 24),
    ("isCIDR('1.2.3.4')", None, False),
    # variables
    ("self.spec.replicas <= 5", {"spec": {"replicas": 3}}, True),
    ("self.items.all(i, i.startsWith('a'))", {"items": ["ab", "ac"]}, True),
    ("has(self.spec) && !has(self.status)", {"spec": {}}, True),
]


@pytest.mark.parametrize(("expression", "value", "expected"), RESULTS)
def test_results(expression: str, value: Any, expected: Any) -> None:
    program = cel.compile(expression, SELF)
    assert cel.to_json(program.evaluate({"self": cel.from_json(value)})) == expected


COMPILE_ERRORS = [
    # cel-go: "undeclared reference to 'x' (in container '')"
    ("x > 1", "ERROR: <input>:1:1: undeclared reference to 'x' (in container '')\n | x > 1\n | ^"),
    ("self.a.foo()", "ERROR: <input>:1:8: undeclared reference to 'foo' (in container '')"),
    ("self.a >", "ERROR: <input>:1:9: Syntax error: mismatched input '<EOF>'"),
]


@pytest.mark.parametrize(("expression", "message"), COMPILE_ERRORS)
def test_compile_errors(expression: str, message: str) -> None:
    with pytest.raises(cel.CompileError) as caught:
        cel.compile(expression, SELF)
    assert caught.value.message.startswith(message)


EVAL_ERRORS = [
    ("self.missing", {"a": 1}, "no such key: missing"),
    ("1 / (self.a - 1)", {"a": 1}, "division by zero"),
    ("self.a + 1u", {"a": 1}, "no such overload"),
    ("[].max()", None, "max called on empty list"),
    (
        "quantity('x')",
        None,
        "quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    ),
    ("oldSelf == self", {}, "no such attribute(s): oldSelf"),
]


@pytest.mark.parametrize(("expression", "value", "message"), EVAL_ERRORS)
def test_eval_errors(expression: str, value: Any, message: str) -> None:
    program = cel.compile(expression, {"self": cel.DYN, "oldSelf": cel.DYN})
    with pytest.raises(cel.EvalError) as caught:
        program.evaluate({"self": cel.from_json(value)})
    assert caught.value.message == message


def test_programs_are_cached_per_declaration() -> None:
    assert cel.compile("self > 1", SELF) is cel.compile("self > 1", SELF)
    assert cel.compile("self > 1", SELF) is not cel.compile("self > 1", {**SELF, "o": cel.DYN})


def test_cost_limit_nested_comprehensions() -> None:
    program = cel.compile("self.all(x, self.all(y, x != y || x == y))", SELF)
    items = list(range(2000))
    assert program.evaluate({"self": items[:10]}, cost_limit=cel.PER_CALL_LIMIT) is True
    with pytest.raises(cel.CostLimitError) as caught:
        program.evaluate({"self": items}, cost_limit=cel.PER_CALL_LIMIT)
    assert caught.value.message == "operation cancelled: actual cost limit exceeded"
    assert program.estimated_cost(10) < program.estimated_cost(100)
