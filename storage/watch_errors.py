"""ERROR events of watch streams: a ``Status`` object as the event's object.

kube-apiserver reports a watch that cannot continue (compacted history, internal
failure) as one ``ERROR`` event carrying a ``metav1.Status``, then ends the stream;
clients (reflectors) branch on ``code``/``reason`` (410 Expired: relist).
"""

from __future__ import annotations

import orjson

from storage.interfaces import WatchEvent


def status_bytes(code: int, reason: str, message: str) -> bytes:
    """A failure Status as JSON, in the field order kube-apiserver writes."""
    return orjson.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }
    )


def error_event(code: int, reason: str, message: str, resource_version: int = 0) -> WatchEvent:
    return WatchEvent("ERROR", status_bytes(code, reason, message), resource_version)


def expired_event(message: str) -> WatchEvent:
    """410 Expired, e.g. ``too old resource version: 5 (9)``."""
    return error_event(410, "Expired", message)


def internal_error_event(message: str) -> WatchEvent:
    """500 InternalError, the way apierrors.NewInternalError words it."""
    return error_event(500, "InternalError", f"Internal error occurred: {message}")
