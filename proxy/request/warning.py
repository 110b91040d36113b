"""``Warning`` headers (upstream's ``k8s.io/apiserver/pkg/warning``): the value every
warning a request collects is sent as."""

from __future__ import annotations

__all__ = ["warning_header"]


def warning_header(message: str) -> str:
    """A ``Warning`` header value as kube-apiserver sends it: ``299 - "<message>"``."""
    escaped = message.replace("\\", "\\\\").replace('"', '\\"')
    return f'299 - "{escaped}"'
