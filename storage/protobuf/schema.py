"""The Kubernetes protobuf schema: built once into a cache folder, loaded on first use.

Source: Debian 13's ``golang-k8s-api-dev`` and ``golang-k8s-apimachinery-dev``
(k8s.io/api and k8s.io/apimachinery 0.32), downloaded and unpacked (never installed) by
``storage.protobuf.debian``. Their ``generated.proto`` files are compiled with
grpcio-tools' protoc into one ``FileDescriptorSet``; the Go struct tags beside them
(``storage.protobuf.gotypes``) add what the descriptors lack (pointers, omitempty,
inline). Nothing generated is committed: the cache is ``$WATCHCACHE_CACHE_DIR/k8s-proto``,
else ``.cache/k8s-proto`` in a source checkout, else ``~/.cache/watchcache/k8s-proto``.
``make venv`` builds it (``python -m storage.protobuf.schema``); otherwise the first
``load()`` does, and ``SchemaUnavailable`` says what is missing and how to get it.
The kinds Debian has no ``generated.proto`` for (CRDs, APIServices) come from our own
protos, compiled beside it (``storage.protobuf.extensions``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from storage.protobuf import extensions, gotypes
from storage.protobuf.debian import DebianUnavailable, download_and_unpack
from storage.protobuf.errors import SchemaUnavailable

SUITE = "trixie"  # Debian 13
PACKAGES = ("golang-k8s-api-dev", "golang-k8s-apimachinery-dev")
FORMAT = 1  # bump when the cache's layout changes
_SRC = Path("usr/share/gocode/src")
_SKIPPED = ("k8s.io/apimachinery/pkg/apis/testapigroup/",)

_ROOT = Path(__file__).resolve().parents[2]


def cache_dir() -> Path:
    """Where the schema lives (see the module docstring)."""
    explicit = os.environ.get("WATCHCACHE_CACHE_DIR")
    if explicit:
        return Path(explicit) / "k8s-proto"
    if (_ROOT / "pyproject.toml").exists() and os.access(_ROOT, os.W_OK):
        return _ROOT / ".cache" / "k8s-proto"
    return Path.home() / ".cache" / "watchcache" / "k8s-proto"


def _schema_path(base: Path) -> Path:
    return base / f"format-{FORMAT}"


def build(base: Path | None = None) -> Path:
    """Fetch the packages, compile the schema into the cache, return its folder (an
    existing one is kept). SchemaUnavailable with the reason and the remedy."""
    target = _schema_path(base or cache_dir())
    if (target / "schema.json").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="k8s-proto-", dir=target.parent) as tmp:
        work = Path(tmp)
        try:
            versions = download_and_unpack(SUITE, PACKAGES, work / "unpacked")
        except DebianUnavailable as err:
            raise SchemaUnavailable(
                f"the Kubernetes protobuf schema is not in {target} and could not be "
                f"fetched ({err}). It comes from Debian 13's {' and '.join(PACKAGES)}: "
                "run `python -m storage.protobuf.schema` on a machine with apt-get and "
                "network access to Debian, or set WATCHCACHE_CACHE_DIR to a folder that "
                "holds a built k8s-proto/ cache; or use --storage-media-type=application/json"
            ) from err
        out = work / "out"
        out.mkdir()
        _compile(work / "unpacked" / _SRC, out, versions)
        if not (target / "schema.json").exists():  # another process may have won
            shutil.rmtree(target, ignore_errors=True)
            (out).rename(target)
    return target


def _compile(src: Path, out: Path, versions: dict[str, str]) -> None:
    protos = sorted(
        str(p.relative_to(src))
        for p in src.glob("k8s.io/**/generated.proto")
        if not str(p.relative_to(src)).startswith(_SKIPPED)
    )
    args = [
        sys.executable,
        "-m",
        "grpc_tools.protoc",
        f"-I{src}",
        "--include_imports",
        f"--descriptor_set_out={out / 'descriptors.binpb'}",
        *protos,
    ]
    # a subprocess: protoc's warnings (unused imports upstream) go to our pipe, not stderr
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SchemaUnavailable(f"protoc failed on {src}: {done.stderr.strip()[-500:]}")
    packages: dict[str, Any] = {}
    wrappers: list[str] = []
    for rel in protos:
        go_dir = str(Path(rel).parent)
        package = go_dir.replace("/", ".")
        package_dir = src / go_dir
        packages[package] = {
            "dir": go_dir,
            "group": gotypes.group_name(package_dir),
            "structs": gotypes.parse_package(package_dir),
        }
        wrappers += gotypes.list_wrappers(src / rel, package)
    schema = {"format": FORMAT, "debian": versions, "packages": packages, "wrappers": wrappers}
    (out / "schema.json").write_text(json.dumps(schema, sort_keys=True), encoding="utf-8")


class RawSchema:
    """The cache's contents: descriptors (a FileDescriptorSet) and the Go facts."""

    def __init__(self, folder: Path) -> None:
        from google.protobuf import descriptor_pb2

        self.folder = folder
        self.descriptors = descriptor_pb2.FileDescriptorSet()
        self.descriptors.ParseFromString((folder / "descriptors.binpb").read_bytes())
        facts = json.loads((folder / "schema.json").read_text(encoding="utf-8"))
        self.debian_versions: dict[str, str] = facts["debian"]
        self.packages: dict[str, Any] = facts["packages"]
        self.wrappers: frozenset[str] = frozenset(facts["wrappers"])
        # the kinds Debian lacks (CRDs, APIServices): our own protos, compiled beside
        extra = descriptor_pb2.FileDescriptorSet()
        extra.ParseFromString(extensions.build(folder).read_bytes())
        self.descriptors.file.extend(extra.file)
        self.packages.update(extensions.packages())


_lock = threading.Lock()
_loaded: RawSchema | None = None


def load_raw() -> RawSchema:
    """The schema from the cache, built first if needed (once per process);
    SchemaUnavailable if that fails."""
    global _loaded
    with _lock:
        if _loaded is None:
            _loaded = RawSchema(build())
        return _loaded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m storage.protobuf.schema",
        description="Build the Kubernetes protobuf schema cache from Debian's packages.",
    )
    parser.add_argument("--cache-dir", type=Path, help="instead of the default cache folder")
    parser.add_argument("--optional", action="store_true", help="exit 0 when unavailable")
    args = parser.parse_args(argv)
    try:
        folder = build(args.cache_dir)
        extensions.build(folder)
    except SchemaUnavailable as err:
        print(f"warning: {err}" if args.optional else f"error: {err}", file=sys.stderr)
        return 0 if args.optional else 1
    print(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
