"""A kubeconfig for the lab's server, for the bundled real kubectl: the plain port
(``kubeconfig``), or the secure port with the lab's CA and two users, the administrator
and the restricted learner, each with a context (``secure_kubeconfig``)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

__all__ = ["kubeconfig", "secure_kubeconfig", "write_kubeconfig"]


def kubeconfig(server_url: str, *, token: str | None = None, name: str = "watchcache-lab") -> str:
    """The YAML text of a kubeconfig whose current context points at ``server_url``."""
    user: dict[str, str] = {"token": token} if token else {}
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server_url}}],
        "users": [{"name": f"{name}-user", "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": f"{name}-user"}}],
        "current-context": name,
        "preferences": {},
    }
    return yaml.safe_dump(doc, sort_keys=False)


def _data(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def secure_kubeconfig(server_url: str, pki_dir: Path, users: tuple[str, ...],
                      name: str = "watchcache-lab") -> str:  # fmt: skip
    """HTTPS with the lab CA; one user and one context per client certificate in
    ``pki_dir`` (``<user>.crt``/``.key``); the first user's context is current."""
    contexts: list[dict[str, Any]] = []
    entries: list[dict[str, Any]] = []
    for user in users:
        entries.append({"name": user, "user": {
            "client-certificate-data": _data(pki_dir / f"{user}.crt"),
            "client-key-data": _data(pki_dir / f"{user}.key")}})  # fmt: skip
        contexts.append({"name": user, "context": {"cluster": name, "user": user,
                                                   "namespace": "default"}})  # fmt: skip
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {
            "server": server_url, "certificate-authority-data": _data(pki_dir / "ca.crt")}}],
        "users": entries,
        "contexts": contexts,
        "current-context": users[0],
        "preferences": {},
    }  # fmt: skip
    return yaml.safe_dump(doc, sort_keys=False)


def write_kubeconfig(path: Path, server_url: str, *, token: str | None = None,
                     text: str | None = None) -> Path:  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text is not None else kubeconfig(server_url, token=token))
    path.chmod(0o600)
    return path
