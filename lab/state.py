"""The running lab's state file (``<dir>/state.json``): what the lab started and where.

Written by ``watchcache lab`` once everything is ready, updated when the lab restarts
etcd, removed when the lab stops. ``watchcache lab demo`` and the tests read it to find
the server, etcd and the lab's control socket; nothing else is shared between them.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = ["LabState", "NoLab", "state_path"]

STATE_FILE = "state.json"


class NoLab(RuntimeError):
    """No running lab in this directory."""


def state_path(lab_dir: Path) -> Path:
    return lab_dir / STATE_FILE


@dataclass
class LabState:
    """Where the lab's pieces are. ``own_etcd`` is False with ``--etcd-servers`` (the
    lab did not start etcd and will not stop it); ``etcd_pids`` is empty while the lab's
    etcd is stopped; ``control_socket`` is the lab process's unix socket that stops
    and starts its etcd (the ``etcd-down`` demo)."""

    lab_pid: int
    server_url: str
    server_pid: int
    etcd_endpoints: list[str]
    etcd_version: str
    prefix: str = "/registry"
    own_etcd: bool = False
    etcd_pids: list[int] = field(default_factory=list)
    control_socket: str | None = None
    kubeconfig: str = ""
    pods: int = 0
    nodes: int = 0
    namespaces: int = 0
    configmaps: int = 0
    # the HTTPS port's URL and the lab's PKI (CA, client certificates, token file)
    secure_url: str = ""
    pki_dir: str = ""

    def save(self, lab_dir: Path) -> None:
        """Atomic write (a reader never sees half a file)."""
        lab_dir.mkdir(parents=True, exist_ok=True)
        tmp = lab_dir / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n")
        os.replace(tmp, state_path(lab_dir))

    @classmethod
    def load(cls, lab_dir: Path) -> LabState:
        path = state_path(lab_dir)
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise NoLab(f"no running lab in {lab_dir} (start one with `watchcache lab`)") from None
        state = cls(**data)
        if not _alive(state.lab_pid):
            raise NoLab(f"the lab in {lab_dir} (pid {state.lab_pid}) is not running")
        return state

    @staticmethod
    def remove(lab_dir: Path) -> None:
        state_path(lab_dir).unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
