"""``watchcache lab decode KEY [--revision N]``: one etcd value as the course reads it,
as ``auger decode`` shows it.

A Kubernetes course reads a Pod straight from etcd (``etcdctl get
/registry/pods/default/web``) and shows bytes that start with ``k8s\\0``: kube-apiserver
stores protobuf by default, a ``runtime.Unknown`` envelope (the object's apiVersion and
kind, then the object's own protobuf bytes) behind a 4-byte magic. This command reads the
raw value of ``KEY`` from the lab's etcd (endpoints from ``.lab/state.json``; at
``--revision N``, an older version if etcd still keeps it) and prints

- the key's etcd facts: mod and create revision, version, lease (Events have one:
  ``--event-ttl``);
- the envelope: protobuf (``k8s\\0`` + runtime.Unknown: apiVersion, kind, the raw
  object's size, contentEncoding and contentType), JSON or YAML (``--storage-media-type``),
  with the value's first bytes as etcdctl prints them;
- the decoded object as YAML, without its managedFields;
- the managedFields (who owns which field: server-side apply's bookkeeping), as YAML.

``KEY`` may be ``-``: the raw value is read from stdin (``etcdctl get KEY
--print-value-only | watchcache lab decode -``; etcdctl's trailing newline is dropped).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from etcdclient import EtcdClient
from etcdclient.errors import EtcdError
from lab.state import LabState, NoLab
from storage import codec
from storage.errors import CorruptObject
from storage.protobuf.converter import ConversionError
from storage.protobuf.serializer import unwrap

__all__ = ["describe_value", "main"]

JSON = dict[str, object]
SHOWN_BYTES = 48


@dataclass(frozen=True)
class RawValue:
    """A value and what etcd says of it (revisions 0 when read from stdin)."""

    key: str
    value: bytes
    mod_revision: int = 0
    create_revision: int = 0
    version: int = 0
    lease: int = 0


def envelope(value: bytes) -> list[str]:
    """Lines describing how ``value`` is encoded."""
    shown = value[:SHOWN_BYTES].decode("latin-1").encode("unicode_escape").decode()
    more = f" ... ({len(value)} bytes)" if len(value) > SHOWN_BYTES else f" ({len(value)} bytes)"
    as_etcdctl = f"bytes:     {shown}{more}"
    if value.startswith(codec.PROTOBUF_MAGIC):
        try:
            unknown = unwrap(value)
        except ConversionError as e:
            return [f"envelope:  k8s\\0 but not a runtime.Unknown: {e}", as_etcdctl]
        return [
            "envelope:  protobuf: k8s\\0 (magic) + runtime.Unknown",
            f"             typeMeta.apiVersion: {unknown.api_version}",
            f"             typeMeta.kind:       {unknown.kind}",
            f"             raw:                 {len(unknown.raw)} bytes (the {unknown.kind} "
            "message)",
            f"             contentEncoding:     {unknown.content_encoding!r}",
            f"             contentType:         {unknown.content_type!r}",
            as_etcdctl,
        ]
    kind = "JSON" if value.lstrip()[:1] == b"{" else "YAML (or not an object)"
    return [f"envelope:  {kind}: no envelope, the object's own text", as_etcdctl]


def describe_value(raw: RawValue) -> str:
    """The whole report for one value: etcd facts, envelope, object, managedFields."""
    lines = [f"key:       {raw.key}"]
    if raw.mod_revision:
        lines.append(f"revision:  mod {raw.mod_revision}, create {raw.create_revision}, "
                     f"version {raw.version}")  # fmt: skip
        lines.append(f"lease:     {hex(raw.lease) if raw.lease else 'none'}")
    lines += envelope(raw.value)
    try:
        obj = codec.decode_object(raw.key, raw.value, raw.mod_revision)
    except CorruptObject as e:
        lines.append(f"cannot decode: {e}")
        return "\n".join(lines) + "\n"
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    managed = meta.pop("managedFields", None) if isinstance(meta, dict) else None
    lines += ["", "--- object (YAML; metadata.managedFields below)",
              yaml.safe_dump(obj, sort_keys=False, allow_unicode=True).rstrip()]  # fmt: skip
    lines += ["", "--- managedFields"]
    lines.append(yaml.safe_dump(managed, sort_keys=False).rstrip() if managed else "(none)")
    return "\n".join(lines) + "\n"


async def read(endpoints: list[str], key: str, revision: int) -> RawValue | str:
    """The value of ``key`` at ``revision`` (0: newest), or why there is none."""
    async with EtcdClient(endpoints) as etcd:
        try:
            got = await etcd.get(key.encode(), revision=revision)
        except EtcdError as e:
            return f"etcd refused the read: {e}"
    if got.kv is None:
        at = f" at revision {revision}" if revision else ""
        return f"no such key{at}: {key} (etcd revision {got.revision})"
    kv = got.kv
    return RawValue(key, kv.value, kv.mod_revision, kv.create_revision, kv.version, kv.lease)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="watchcache lab decode", description=__doc__.split("\n\n")[0],
                                epilog="e.g. watchcache lab decode /registry/pods/default/web")
    p.add_argument("key", help="the etcd key (e.g. /registry/pods/NS/NAME), or - for stdin")
    p.add_argument("--revision", type=int, default=0, help="read the key at this etcd revision")
    p.add_argument("--dir", type=Path, default=Path(".lab"), help="lab directory (.lab)")
    p.add_argument("--endpoints", default="", help="etcd endpoints (default: the lab's)")
    a = p.parse_args(argv)
    if a.key == "-":
        data = sys.stdin.buffer.read()
        sys.stdout.write(describe_value(RawValue("(stdin)", data.removesuffix(b"\n"))))
        return 0
    if a.endpoints:
        endpoints = a.endpoints.split(",")
    else:
        try:
            endpoints = LabState.load(a.dir.resolve()).etcd_endpoints
        except NoLab as e:
            print(f"{e} (or give --endpoints)", file=sys.stderr)
            return 2
    found = asyncio.run(read(endpoints, a.key, a.revision))
    if isinstance(found, str):
        print(found, file=sys.stderr)
        return 1
    sys.stdout.write(describe_value(found))
    return 0
