"""CEL object construction, as MutatingAdmissionPolicy writes it, turned into map
literals the engine evaluates: ``Object{spec: Object.spec{replicas: 1}}`` becomes
``{"spec": {"replicas": 1}}`` and ``JSONPatch{op: "add", path: "/x", value: 1}``
becomes ``{"op": "add", "path": "/x", "value": 1}``.

In CEL an identifier path immediately followed by ``{`` can only be a message
construction, whose keys are bare field names; a map literal's keys are expressions.
The rewrite drops the type name and quotes the field names of that brace level,
leaving strings, comments-free text and everything else as it was. Type checking of
the fields (upstream's, against the object's schema) is not done.
"""

from __future__ import annotations

import re

__all__ = ["rewrite"]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*\s*\{")
_KEYWORDS = frozenset({"in", "true", "false", "null"})  # `x in {...}` is a map
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FIELD = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*:")


def _string_end(text: str, i: int) -> int:
    """The index after the string literal starting at ``i`` (quotes ', ", triple)."""
    quote = text[i]
    if text.startswith(quote * 3, i):
        end = text.find(quote * 3, i + 3)
        return len(text) if end < 0 else end + 3
    j = i + 1
    while j < len(text) and text[j] != quote:
        j += 2 if text[j] == "\\" else 1
    return j + 1


def rewrite(expression: str) -> str:
    """``expression`` with message constructions as map literals."""
    out: list[str] = []
    stack: list[str] = []  # open brackets: "(", "[", "map", "struct"
    i = 0
    expect_field = False
    while i < len(expression):
        ch = expression[i]
        if ch in "'\"":
            end = _string_end(expression, i)
            out.append(expression[i:end])
            i, expect_field = end, False
            continue
        if expect_field:
            expect_field = False
            m = _FIELD.match(expression, i)
            if m:
                out.append(f'"{m.group(1)}":')
                i = m.end()
                continue
        word = _WORD.match(expression, i)
        if word:
            m = _IDENT.match(expression, i)
            if m and word.group(0) not in _KEYWORDS:  # a message construction: TypeName{ ... }
                out.append("{")
                stack.append("struct")
                i, expect_field = m.end(), True
            else:
                out.append(word.group(0))
                i = word.end()
            continue
        if ch in "([{":
            stack.append({"(": "(", "[": "[", "{": "map"}[ch])
        elif ch in ")]}" and stack:
            stack.pop()
        elif ch == "," and stack and stack[-1] == "struct":
            expect_field = True
        out.append(ch)
        i += 1
    return "".join(out)
