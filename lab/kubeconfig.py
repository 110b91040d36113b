"""A kubeconfig for the lab's server, for the bundled real kubectl."""

from __future__ import annotations

from pathlib import Path

import yaml

__all__ = ["kubeconfig", "write_kubeconfig"]


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


def write_kubeconfig(path: Path, server_url: str, *, token: str | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(kubeconfig(server_url, token=token))
    path.chmod(0o600)
    return path
