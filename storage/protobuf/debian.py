"""Download Debian packages and unpack them (never install), from the machine's own mirror.

The apt state is private (a temp dir), so the system's sources, lists and package
database are untouched; the mirror is the one the machine's apt configuration already
names for its main Debian suite (``apt-get indextargets``), so this project names no
host. Needs ``apt-get`` and ``dpkg-deb`` (any Debian or Ubuntu); elsewhere
``DebianUnavailable`` says so.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


class DebianUnavailable(RuntimeError):
    """The packages could not be fetched (no apt-get/dpkg-deb, no mirror, no network)."""


def debian_mirror() -> str:
    """The base URI of the machine's main Debian archive (``.../debian/``), read from its
    apt configuration; DebianUnavailable if it names none."""
    if shutil.which("apt-get") is None:
        raise DebianUnavailable("apt-get is not available on this machine")
    out = _run(
        [
            "apt-get",
            "indextargets",
            "--no-release-info",
            "--format",
            "$(REPO_URI) $(RELEASE)",
            "Identifier: Packages",
        ]
    )
    for line in out.splitlines():
        uri, _, release = line.partition(" ")
        # the main suite ("bookworm"), not "-updates"/"-security"/"-backports"
        if uri.rstrip("/").endswith("/debian") and "-" not in release:
            return uri if uri.endswith("/") else uri + "/"
    raise DebianUnavailable("the apt configuration names no Debian archive")


def download_and_unpack(suite: str, packages: Sequence[str], dest: Path) -> dict[str, str]:
    """Download ``packages`` from Debian ``suite`` and unpack each into ``dest``; return
    ``{package: version}``. DebianUnavailable on any failure."""
    if shutil.which("dpkg-deb") is None:
        raise DebianUnavailable("dpkg-deb is not available on this machine")
    mirror = debian_mirror()
    with tempfile.TemporaryDirectory(prefix="watchcache-apt-") as tmp:
        root = Path(tmp)
        for sub in (
            "etc/apt/sources.list.d",
            "etc/apt/preferences.d",
            "var/lib/apt/lists/partial",
            "var/cache/apt/archives/partial",
            "debs",
        ):
            (root / sub).mkdir(parents=True, exist_ok=True)
        (root / "etc/apt/sources.list").write_text(
            f"deb [signed-by={KEYRING}] {mirror} {suite} main\n", encoding="utf-8"
        )
        opts = [
            "-o", f"Dir::Etc={root}/etc/apt",
            "-o", f"Dir::State={root}/var/lib/apt",
            "-o", f"Dir::Cache={root}/var/cache/apt",
            "-o", "Dir::Etc::sourceparts=-",
            "-o", "APT::Get::List-Cleanup=0",
            "-o", "Debug::NoLocking=1",
            "-o", "APT::Sandbox::User=root",
            "-q",
        ]  # fmt: skip
        _run(["apt-get", *opts, "update"])
        _run(["apt-get", *opts, "download", *packages], cwd=root / "debs")
        versions: dict[str, str] = {}
        for deb in sorted((root / "debs").glob("*.deb")):
            name, version, _ = deb.name.split("_", 2)
            _run(["dpkg-deb", "-x", str(deb), str(dest)])
            versions[name] = version.replace("%3a", ":")
    missing = set(packages) - set(versions)
    if missing:
        raise DebianUnavailable(f"not downloaded: {', '.join(sorted(missing))}")
    return versions


def _run(args: list[str], cwd: Path | None = None) -> str:
    try:
        done = subprocess.run(
            args, cwd=cwd, capture_output=True, text=True, check=False, timeout=300
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise DebianUnavailable(f"{args[0]} failed: {err}") from err
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise DebianUnavailable(f"{' '.join(args[:2])} failed: {' '.join(detail)}")
    return done.stdout
