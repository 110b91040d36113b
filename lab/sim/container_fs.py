"""A simulated container's filesystem: in memory, per container, never the lab host's.

It holds what a container image and the pod's volume mounts would put there: a few
system files (``/etc/hostname``, ``/etc/hosts``, ``/etc/resolv.conf``,
``/etc/os-release``), and each ``volumeMount`` of the container with the files its
volume projects (ConfigMap and Secret keys, the service-account token, ``ca.crt`` and
``namespace`` of ``kube-api-access-*``), as the kubelet's volume plugins write them.
``tar`` (``kubectl cp``) reads and writes it as tar streams.
"""

from __future__ import annotations

import io
import posixpath
import tarfile
import time
from dataclasses import dataclass, field

__all__ = ["FileSystem", "FsError"]


class FsError(Exception):
    """A failed file operation, worded as coreutils word it (``No such file or directory``)."""


@dataclass
class _Node:
    data: bytearray | None  # None: a directory
    mode: int
    mtime: float = field(default_factory=time.time)

    @property
    def is_dir(self) -> bool:
        return self.data is None


class FileSystem:
    """Absolute, normalised paths to files and directories."""

    def __init__(self) -> None:
        self._nodes: dict[str, _Node] = {"/": _Node(None, 0o755)}

    @staticmethod
    def resolve(cwd: str, path: str) -> str:
        return posixpath.normpath(posixpath.join(cwd, path)).replace("//", "/")

    def exists(self, path: str) -> bool:
        return path in self._nodes

    def is_dir(self, path: str) -> bool:
        node = self._nodes.get(path)
        return node is not None and node.is_dir

    def mkdir(self, path: str, mode: int = 0o755) -> None:
        """``mkdir -p``."""
        parts = [p for p in path.split("/") if p]
        at = ""
        for part in parts:
            at += "/" + part
            node = self._nodes.get(at)
            if node is None:
                self._nodes[at] = _Node(None, mode)
            elif not node.is_dir:
                raise FsError(f"{at}: Not a directory")

    def write(self, path: str, data: bytes, mode: int = 0o644, append: bool = False) -> None:
        parent = posixpath.dirname(path)
        if not self.is_dir(parent):
            raise FsError(f"{path}: No such file or directory")
        node = self._nodes.get(path)
        if node is not None and node.is_dir:
            raise FsError(f"{path}: Is a directory")
        if node is not None and append:
            assert node.data is not None
            node.data += data
            node.mtime = time.time()
        else:
            self._nodes[path] = _Node(bytearray(data), mode)

    def read(self, path: str) -> bytes:
        node = self._nodes.get(path)
        if node is None:
            raise FsError(f"{path}: No such file or directory")
        if node.data is None:
            raise FsError(f"{path}: Is a directory")
        return bytes(node.data)

    def remove(self, path: str, recursive: bool = False) -> None:
        node = self._nodes.get(path)
        if node is None or path == "/":
            raise FsError(f"{path}: No such file or directory")
        if node.is_dir and not recursive:
            raise FsError(f"{path}: Is a directory")
        for p in [p for p in self._nodes if p == path or p.startswith(path + "/")]:
            del self._nodes[p]

    def listdir(self, path: str) -> list[str]:
        if not self.is_dir(path):
            raise FsError(f"{path}: No such file or directory")
        prefix = path.rstrip("/") + "/"
        names = (p[len(prefix):] for p in self._nodes if p.startswith(prefix) and p != "/")
        return sorted(n for n in names if "/" not in n)

    def stat(self, path: str) -> tuple[bool, int, int, float]:
        """(is a directory, mode, size, mtime)."""
        node = self._nodes.get(path)
        if node is None:
            raise FsError(f"{path}: No such file or directory")
        return node.is_dir, node.mode, len(node.data or b""), node.mtime

    def walk(self, path: str) -> list[str]:
        """``path`` and everything under it, parents first."""
        if path not in self._nodes:
            raise FsError(f"{path}: No such file or directory")
        return sorted(p for p in self._nodes if p == path or p.startswith(path.rstrip("/") + "/"))

    # -- tar, as kubectl cp uses it ------------------------------------------------------

    def tar_create(self, cwd: str, members: list[str]) -> bytes:
        """``tar cf - MEMBERS``: a tar stream; names relative as tar stores them (the
        leading ``/`` removed)."""
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as tar:
            for member in members:
                for path in self.walk(self.resolve(cwd, member)):
                    is_dir, mode, size, mtime = self.stat(path)
                    info = tarfile.TarInfo(path.lstrip("/") or ".")
                    info.mode, info.mtime = mode, int(mtime)
                    if is_dir:
                        info.type = tarfile.DIRTYPE
                        tar.addfile(info)
                    else:
                        info.size = size
                        tar.addfile(info, io.BytesIO(self.read(path)))
        return out.getvalue()

    def tar_extract(self, directory: str, stream: bytes) -> list[str]:
        """``tar xf - -C DIRECTORY``: the paths written. Members that climb out of
        ``directory`` are skipped, as GNU tar strips leading ``../``."""
        written: list[str] = []
        self.mkdir(directory)
        with tarfile.open(fileobj=io.BytesIO(stream), mode="r:*") as tar:
            for info in tar:
                name = posixpath.normpath("/" + info.name).lstrip("/")
                if not name or name.startswith(".."):
                    continue
                path = self.resolve(directory, name)
                if info.isdir():
                    self.mkdir(path, info.mode or 0o755)
                elif info.isfile():
                    self.mkdir(posixpath.dirname(path))
                    reader = tar.extractfile(info)
                    self.write(path, reader.read() if reader else b"", info.mode or 0o644)
                else:
                    continue
                written.append(path)
        return written
