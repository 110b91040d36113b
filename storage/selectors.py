"""Label and field selectors, as k8s.io/apimachinery/pkg/labels and pkg/fields parse them.

Label selectors: ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k``,
``!k`` and the numeric ``k>n`` / ``k<n``; a comma is AND. Keys must be qualified names,
values label values, validated with the upstream messages. Field selectors: ``f=v``,
``f==v``, ``f!=v``; ``\\``, ``,`` and ``=`` in values are backslash-escaped.

Parse errors raise ``SelectorError`` whose message is the upstream error text, e.g.
``unable to parse requirement: values[0][app]: Invalid value: "a b": ...``. Selectors
are immutable; ``str()`` gives the normalized form (requirements sorted by key, set
values sorted), which parses back to an equal selector.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import orjson

from storage.validation import is_qualified_name, is_valid_label_value


class SelectorError(ValueError):
    """A selector string that does not parse; ``str(err)`` is the upstream message."""


def _go_quote(s: str) -> str:
    """Go's %q for the printable strings selectors carry (JSON escaping is close)."""
    return orjson.dumps(s).decode()


def _invalid(path: str, value: str, detail: str) -> str:
    """field.Invalid(path, value, detail).Error()"""
    return f"{path}: Invalid value: {_go_quote(value)}: {detail}"


def _aggregate(errs: list[str]) -> str:
    return errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"


# ---------------------------------------------------------------------------------------
# Label selectors

_EXISTS = "exists"
_NOT_EXISTS = "!"
_IN = "in"
_NOT_IN = "notin"
_EQ = "="
_DEQ = "=="
_NEQ = "!="
_GT = "gt"
_LT = "lt"
_BINARY_OPERATORS = (_IN, _NOT_IN, _EQ, _DEQ, _NEQ, _GT, _LT)
_SET_OPERATORS = (_IN, _NOT_IN)


@dataclass(frozen=True, slots=True)
class Requirement:
    """One term of a label selector. ``values`` are sorted and distinct."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op in (_IN, _EQ, _DEQ):
            return self.key in labels and labels[self.key] in self.values
        if op in (_NOT_IN, _NEQ):
            return self.key not in labels or labels[self.key] not in self.values
        if op == _EXISTS:
            return self.key in labels
        if op == _NOT_EXISTS:
            return self.key not in labels
        return self._matches_numeric(labels)

    def _matches_numeric(self, labels: Mapping[str, str]) -> bool:
        if self.key not in labels or len(self.values) != 1:
            return False
        have, want = _parse_int64(labels[self.key]), _parse_int64(self.values[0])
        if have is None or want is None:
            return False
        return have > want if self.operator == _GT else have < want

    def __str__(self) -> str:
        op = self.operator
        if op == _EXISTS:
            return self.key
        if op == _NOT_EXISTS:
            return "!" + self.key
        values = ",".join(self.values)
        if op in _SET_OPERATORS:
            return f"{self.key} {op} ({values})"
        symbol = {_GT: ">", _LT: "<"}.get(op, op)
        return f"{self.key}{symbol}{values}"


_INT64 = re.compile(r"^[+-]?[0-9]+$")


def _parse_int64(s: str) -> int | None:
    """strconv.ParseInt(s, 10, 64), None on error."""
    if not _INT64.match(s):
        return None
    n = int(s)
    return n if -(2**63) <= n < 2**63 else None


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """AND of requirements, sorted by key (stable), as labels.Parse returns them."""

    requirements: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    def requires_exact_match(self, label: str) -> str | None:
        """The single value the selector requires for ``label``, if it does."""
        for r in self.requirements:
            if r.key == label:
                if r.operator in (_EQ, _DEQ, _IN) and len(r.values) == 1:
                    return r.values[0]
                return None
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


# Lexer tokens.
_T_ERROR, _T_EOS, _T_CLOSE, _T_COMMA, _T_NOT, _T_DEQ, _T_EQ = range(7)
_T_GT, _T_ID, _T_IN, _T_LT, _T_NEQ, _T_NOTIN, _T_OPEN = range(7, 14)
_STRING_TOKENS = {
    ")": _T_CLOSE,
    ",": _T_COMMA,
    "!": _T_NOT,
    "==": _T_DEQ,
    "=": _T_EQ,
    ">": _T_GT,
    "in": _T_IN,
    "<": _T_LT,
    "!=": _T_NEQ,
    "notin": _T_NOTIN,
    "(": _T_OPEN,
}
_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")


def _lex(s: str) -> list[tuple[int, str]]:
    """All tokens of ``s`` up to and including end-of-string (a NUL also ends it, as in
    the Go lexer that reads 0 past the end)."""
    items: list[tuple[int, str]] = []
    pos, n = 0, len(s)
    while True:
        while pos < n and s[pos] in _WHITESPACE:
            pos += 1
        if pos >= n or s[pos] == "\x00":
            items.append((_T_EOS, ""))
            return items
        if s[pos] in _SPECIAL:
            tok, lit, pos = _lex_special(s, pos)
        else:
            start = pos
            while pos < n and s[pos] != "\x00" and s[pos] not in _SPECIAL | _WHITESPACE:
                pos += 1
            lit = s[start:pos]
            tok = _STRING_TOKENS.get(lit, _T_ID)
        items.append((tok, lit))


def _lex_special(s: str, pos: int) -> tuple[int, str, int]:
    best: tuple[int, str] | None = None
    buf = ""
    while pos < len(s) and s[pos] in _SPECIAL:
        buf += s[pos]
        tok = _STRING_TOKENS.get(buf)
        if tok is not None:
            best = (tok, buf)
        elif best is not None:
            break
        pos += 1
    if best is None:
        return _T_ERROR, f"error expected: keyword found '{buf}'", pos
    return best[0], best[1], pos


class _LabelParser:
    def __init__(self, selector: str) -> None:
        self.items = _lex(selector)
        self.pos = 0

    def lookahead(self, values: bool = True) -> tuple[int, str]:
        return self._as(self.items[self.pos], values)

    def consume(self, values: bool = True) -> tuple[int, str]:
        self.pos += 1
        return self._as(self.items[self.pos - 1], values)

    @staticmethod
    def _as(item: tuple[int, str], values: bool) -> tuple[int, str]:
        tok, lit = item
        if values and tok in (_T_IN, _T_NOTIN):
            return _T_ID, lit
        return tok, lit

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            tok, lit = self.lookahead()
            if tok == _T_EOS:
                return reqs
            if tok not in (_T_ID, _T_NOT):
                raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")
            try:
                reqs.append(self.requirement())
            except SelectorError as err:
                raise SelectorError(f"unable to parse requirement: {err}") from None
            tok, lit = self.consume()
            if tok == _T_EOS:
                return reqs
            if tok != _T_COMMA:
                raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            tok2, lit2 = self.lookahead()
            if tok2 not in (_T_ID, _T_NOT):
                raise SelectorError(f"found '{lit2}', expected: identifier after ','")

    def requirement(self) -> Requirement:
        key, operator = self.key_and_inferred_operator()
        if operator in (_EXISTS, _NOT_EXISTS):
            return _new_requirement(key, operator, [])
        operator = self.operator()
        values = self.set_values() if operator in _SET_OPERATORS else self.exact_value()
        return _new_requirement(key, operator, sorted(values))

    def key_and_inferred_operator(self) -> tuple[str, str]:
        operator = ""
        tok, lit = self.consume()
        if tok == _T_NOT:
            operator = _NOT_EXISTS
            tok, lit = self.consume()
        if tok != _T_ID:
            raise SelectorError(f"found '{lit}', expected: identifier")
        errs = is_qualified_name(lit)
        if errs:
            raise SelectorError(_invalid("<nil>", lit, "; ".join(errs)))
        if self.lookahead()[0] in (_T_EOS, _T_COMMA) and operator != _NOT_EXISTS:
            operator = _EXISTS
        return lit, operator

    def operator(self) -> str:
        tok, lit = self.consume(values=False)
        ops = {
            _T_IN: _IN,
            _T_EQ: _EQ,
            _T_DEQ: _DEQ,
            _T_GT: _GT,
            _T_LT: _LT,
            _T_NOTIN: _NOT_IN,
            _T_NEQ: _NEQ,
        }
        if tok not in ops:
            raise SelectorError(f"found '{lit}', expected: {', '.join(_BINARY_OPERATORS)}")
        return ops[tok]

    def set_values(self) -> set[str]:
        tok, lit = self.consume()
        if tok != _T_OPEN:
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self.lookahead()
        if tok in (_T_ID, _T_COMMA):
            values = self.identifiers()
            if self.consume()[0] != _T_CLOSE:
                raise SelectorError(f"found '{lit}', expected: ')'")
            return values
        if tok == _T_CLOSE:
            self.consume()
            return {""}
        raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")

    def identifiers(self) -> set[str]:
        values: set[str] = set()
        while True:
            tok, lit = self.consume()
            if tok == _T_ID:
                values.add(lit)
                tok2, lit2 = self.lookahead()
                if tok2 == _T_CLOSE:
                    return values
                if tok2 != _T_COMMA:
                    raise SelectorError(f"found '{lit2}', expected: ',' or ')'")
            elif tok == _T_COMMA:
                if not values:
                    values.add("")
                tok2 = self.lookahead()[0]
                if tok2 == _T_CLOSE:
                    values.add("")
                    return values
                if tok2 == _T_COMMA:
                    values.add("")
            else:
                raise SelectorError(f"found '{lit}', expected: ',', or identifier")

    def exact_value(self) -> set[str]:
        tok = self.lookahead()[0]
        if tok in (_T_EOS, _T_COMMA):
            return {""}
        tok, lit = self.consume()
        if tok == _T_ID:
            return {lit}
        raise SelectorError(f"found '{lit}', expected: identifier")


def _new_requirement(key: str, operator: str, values: list[str]) -> Requirement:
    """labels.NewRequirement's validation, with the parser's (nil) field path."""
    errs: list[str] = []
    key_errs = is_qualified_name(key)
    if key_errs:
        errs.append(_invalid("key", key, "; ".join(key_errs)))
    if operator in (_GT, _LT):
        if len(values) != 1:
            errs.append(
                _invalid_list(
                    "values", values, "for 'Gt', 'Lt' operators, exactly one value is required"
                )
            )
        for i, v in enumerate(values):
            if _parse_int64(v) is None:
                errs.append(
                    _invalid(
                        f"values[{i}]", v, "for 'Gt', 'Lt' operators, the value must be an integer"
                    )
                )
    for i, v in enumerate(values):
        value_errs = is_valid_label_value(v)
        if value_errs:
            errs.append(_invalid(f"values[{i}][{key}]", v, "; ".join(value_errs)))
    if errs:
        raise SelectorError(_aggregate(errs))
    return Requirement(key, operator, tuple(values))


def _invalid_list(path: str, values: list[str], detail: str) -> str:
    return f"{path}: Invalid value: []string{{{', '.join(_go_quote(v) for v in values)}}}: {detail}"


def parse_label_selector(selector: str) -> LabelSelector:
    """labels.Parse: the selector, or SelectorError with the upstream message."""
    reqs = _LabelParser(selector).parse()
    reqs.sort(key=lambda r: r.key)  # stable, like sort.Sort on ByKey for distinct keys
    return LabelSelector(tuple(reqs))


EVERYTHING_LABELS = LabelSelector()


# ---------------------------------------------------------------------------------------
# Field selectors

_FIELD_OPERATORS = ("!=", "==", "=")


@dataclass(frozen=True, slots=True)
class FieldTerm:
    """``field=value`` (``negated`` False) or ``field!=value``; value unescaped."""

    field: str
    value: str
    negated: bool = False

    def matches(self, fields: Mapping[str, str]) -> bool:
        equal = fields.get(self.field, "") == self.value
        return not equal if self.negated else equal

    def __str__(self) -> str:
        op = "!=" if self.negated else "="
        return f"{self.field}{op}{escape_field_value(self.value)}"


@dataclass(frozen=True, slots=True)
class FieldSelector:
    """AND of terms in the order fields.ParseSelector yields them (raw terms sorted)."""

    terms: tuple[FieldTerm, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.terms

    def matches(self, fields: Mapping[str, str]) -> bool:
        return all(t.matches(fields) for t in self.terms)

    def requires_exact_match(self, field: str) -> str | None:
        """The value an ``=`` term requires for ``field`` (the first such term), else None."""
        for t in self.terms:
            if t.field == field and not t.negated:
                return t.value
        return None

    def fields(self) -> set[str]:
        return {t.field for t in self.terms}

    def __str__(self) -> str:
        return ",".join(str(t) for t in self.terms)


def escape_field_value(value: str) -> str:
    """fields.EscapeValue: backslash-escape ``\\``, ``,`` and ``=``."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def unescape_field_value(value: str) -> str:
    """fields.UnescapeValue, raising SelectorError with the upstream messages."""
    if not any(c in value for c in "\\,="):
        return value
    out: list[str] = []
    in_slash = False
    for c in value:
        if in_slash:
            if c not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{c}")
            out.append(c)
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c in ",=":
            # Go prints the rune with %v: its code point.
            raise SelectorError(f"invalid field selector: unescaped character in value: {ord(c)}")
        else:
            out.append(c)
    if in_slash:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(selector: str) -> list[str]:
    if not selector:
        return []
    terms: list[str] = []
    start, in_slash = 0, False
    for i, c in enumerate(selector):
        if in_slash:
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c == ",":
            terms.append(selector[start:i])
            start = i + 1
    terms.append(selector[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    for i in range(len(term)):
        for op in _FIELD_OPERATORS:
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return None


def parse_field_selector(selector: str) -> FieldSelector:
    """fields.ParseSelector: the selector, or SelectorError with the upstream message."""
    terms: list[FieldTerm] = []
    # Go sorts the raw terms by byte order; code-point order is the same for UTF-8.
    for part in sorted(_split_terms(selector)):
        if not part:
            continue
        split = _split_term(part)
        if split is None:
            raise SelectorError(f"invalid selector: '{selector}'; can't understand '{part}'")
        lhs, op, rhs = split
        terms.append(FieldTerm(lhs, unescape_field_value(rhs), negated=op == "!="))
    return FieldSelector(tuple(terms))


EVERYTHING_FIELDS = FieldSelector()
