"""What ``generated.proto`` does not say, read from the Go API types beside it.

go-to-protobuf names each proto field after the Go field's JSON name, but three facts the
JSON and wire encodings depend on live only in the Go struct tags:

- whether the Go field is a pointer (``*int32``, ``*Time``): upstream's Marshal writes a
  value field always (``""``, ``0``, ``false``, an empty message) and a pointer field
  only when set — needed to write the same bytes as kube-apiserver;
- ``omitempty``: encoding/json leaves out zero scalars, nil slices and maps only then;
- ``json:",inline"``: an embedded struct that is one nested message on the wire but
  whose fields sit in the parent's JSON object (``Volume.volumeSource``).

``parse_package(dir)`` reads a Go package's ``*.go`` files (not tests) and returns, per
struct, the fields that carry a ``protobuf:`` tag. It is a line scanner for the gofmt'd,
generated-tag style of ``k8s.io/api``; it is run once, when the schema cache is built.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TypedDict


class GoField(TypedDict):
    """One tagged Go struct field."""

    proto: str  # proto field name (``name=`` in the protobuf tag)
    json: str  # JSON name; "" for an inline struct
    omitempty: bool
    inline: bool
    pointer: bool  # *T
    go_type: str


_STRUCT = re.compile(r"^type (\w+) struct \{")
_FIELD = re.compile(r"^\s+(?:(\w+)\s+)?([\w.*\[\]]+)\s+`([^`]*)`")
_TAG = re.compile(r'(\w+):"([^"]*)"')
_GROUP = re.compile(r'^const GroupName = "([^"]*)"', re.MULTILINE)


def parse_package(package_dir: Path) -> dict[str, list[GoField]]:
    """``{struct name: [tagged fields]}`` of the Go package in ``package_dir``."""
    structs: dict[str, list[GoField]] = {}
    for path in sorted(package_dir.glob("*.go")):
        if path.name.endswith("_test.go"):
            continue
        current: list[GoField] | None = None
        for line in path.read_text(encoding="utf-8").splitlines():
            start = _STRUCT.match(line)
            if start:
                current = structs.setdefault(start.group(1), [])
                continue
            if current is None:
                continue
            if line.startswith("}"):
                current = None
                continue
            field = _parse_field(line)
            if field is not None:
                current.append(field)
    return {name: fields for name, fields in structs.items() if fields}


def _parse_field(line: str) -> GoField | None:
    match = _FIELD.match(line)
    if match is None:
        return None
    tags = dict(_TAG.findall(match.group(3)))
    protobuf = tags.get("protobuf")
    if protobuf is None:
        return None
    options = dict(part.split("=", 1) for part in protobuf.split(",") if "=" in part)
    json_parts = tags.get("json", "").split(",")
    inline = "inline" in json_parts[1:]
    go_type = match.group(2)
    return GoField(
        proto=options.get("name", ""),
        json="" if inline else json_parts[0],
        omitempty="omitempty" in json_parts[1:],
        inline=inline,
        pointer=go_type.startswith("*"),
        go_type=go_type,
    )


def group_name(package_dir: Path) -> str | None:
    """The API group the package registers (``apps``; ``""`` for core), or None."""
    for name in ("register.go", "doc.go"):
        path = package_dir / name
        if path.exists():
            found = _GROUP.search(path.read_text(encoding="utf-8"))
            if found:
                return found.group(1)
    return None


_WRAPPER = re.compile(r"\+protobuf\.nullable=true\n(?://[^\n]*\n)*message (\w+) \{")


def list_wrappers(proto_path: Path, package: str) -> list[str]:
    """Messages go-to-protobuf made for named Go slices (``+protobuf.nullable=true``,
    one ``repeated items = 1`` field): on the wire a message, in JSON the bare list."""
    text = proto_path.read_text(encoding="utf-8")
    return [f"{package}.{name}" for name in _WRAPPER.findall(text)]
