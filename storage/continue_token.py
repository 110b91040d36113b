"""Continue tokens of paged LISTs, in kube-apiserver's wire format (storage/continue.go).

A token is the unpadded base64url encoding of
``{"v":"meta.k8s.io/v1","rv":<int>,"start":"<next key relative to the list prefix>"}``;
the start key is the last returned key plus ``\\x00``. ``rv`` -1 means "continue at the
latest revision" (the token handed out after a compaction). Tokens are opaque to
clients but shared between apiservers, hence the exact format.

``decode_continue`` raises ``InvalidContinue`` with the message kube-apiserver's REST
layer sends (``invalid continue token: continue key is not valid: ...``).
"""

from __future__ import annotations

import base64
import binascii
import posixpath
from typing import Any

import orjson

from storage.errors import InvalidContinue

API_VERSION = "meta.k8s.io/v1"

_GENERIC = "continue key is not valid"
ERR_INVALID_START_RV = (
    "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
)
ERR_EMPTY_START_KEY = "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)"
ERR_UNRECOGNIZED_VERSION = (
    "continue key is not valid: server does not recognize this encoded version"
)


def encode_continue(key: str, key_prefix: str, resource_version: int) -> str:
    """The token continuing at ``key`` (a full key under ``key_prefix``).

    ValueError if ``key`` is not under ``key_prefix`` (upstream's "unable to encode
    next field")."""
    if not key_prefix or not key.startswith(key_prefix):
        raise ValueError(
            f"unable to encode next field: the key and key prefix do not match {key_prefix} {key}"
        )
    token = {"v": API_VERSION, "rv": resource_version, "start": key[len(key_prefix) :]}
    return base64.urlsafe_b64encode(orjson.dumps(token)).rstrip(b"=").decode()


def decode_continue(token: str, key_prefix: str) -> tuple[str, int]:
    """(full start key, resource version) of ``token`` listed under ``key_prefix``.

    rv > 0: read at that revision; rv < 0: read at the latest. Raises InvalidContinue.
    """
    try:
        return _decode(token, key_prefix)
    except _Invalid as err:
        raise InvalidContinue(f"invalid continue token: {err}") from None


class _Invalid(Exception):
    pass


def _decode(token: str, key_prefix: str) -> tuple[str, int]:
    data = _b64decode(token)
    try:
        parsed: Any = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise _Invalid(f"{_GENERIC}: {err}") from None
    if not isinstance(parsed, dict):
        raise _Invalid(f"{_GENERIC}: json: cannot unmarshal into continueToken")
    version, rv, start = _fields(parsed)
    if version != API_VERSION:
        raise _Invalid(f"{ERR_UNRECOGNIZED_VERSION} {version}")
    if rv == 0:
        raise _Invalid(ERR_INVALID_START_RV)
    if not start:
        raise _Invalid(ERR_EMPTY_START_KEY)
    # Refuse path traversal: the cleaned key must equal the key, so a token can never
    # range over anything less specific than key_prefix.
    key = start if start.startswith("/") else "/" + start
    if posixpath.normpath(key) != key or key.startswith("//"):
        raise _Invalid(f"{_GENERIC}: {start}")
    return key_prefix + key[1:], rv


def _fields(parsed: dict[str, Any]) -> tuple[str, int, str]:
    version = parsed.get("v", "")
    rv = parsed.get("rv", 0)
    start = parsed.get("start", "")
    if not isinstance(version, str) or not isinstance(start, str):
        raise _Invalid(f"{_GENERIC}: json: cannot unmarshal into continueToken string field")
    if isinstance(rv, bool) or not isinstance(rv, int) or not -(2**63) <= rv < 2**63:
        raise _Invalid(f"{_GENERIC}: json: cannot unmarshal into continueToken.rv of type int64")
    return version, rv, start


def _b64decode(token: str) -> bytes:
    """base64.RawURLEncoding.DecodeString: no padding allowed, URL alphabet only."""
    if "=" in token or len(token) % 4 == 1:
        raise _Invalid(f"{_GENERIC}: illegal base64 data at input byte {_bad_index(token)}")
    try:
        return base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise _Invalid(
            f"{_GENERIC}: illegal base64 data at input byte {_bad_index(token)}"
        ) from None


_B64URL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def _bad_index(token: str) -> int:
    for i, c in enumerate(token):
        if c not in _B64URL:
            return i
    return len(token) - 1 if token else 0
