"""A document served many times unchanged (aggregated discovery, OpenAPI v3): encoded
once, hashed once, answered 304 to a matching ``If-None-Match``."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["CachedDocument", "header"]


@dataclass(frozen=True)
class CachedDocument:
    """A serialized document and its hash (upper-case hex SHA-512 of the bytes, as
    kube-apiserver's); ``etag`` is the hash in quotes."""

    body: bytes
    hash: str

    @classmethod
    def of(cls, document: Mapping[str, Any]) -> CachedDocument:
        body = orjson.dumps(document)
        return cls(body, hashlib.sha512(body).hexdigest().upper())

    @property
    def etag(self) -> str:
        return f'"{self.hash}"'

    def not_modified(self, request_headers: Mapping[str, str]) -> bool:
        """Whether the request's ``If-None-Match`` names this document."""
        return header(request_headers, "If-None-Match") == self.etag


def header(headers: Mapping[str, str], name: str) -> str | None:
    """A header's value by case-insensitive name (plain mappings in unit tests)."""
    if name in headers:
        return headers[name]
    lowered = name.lower()
    for key, value in headers.items():
        if key.lower() == lowered:
            return value
    return None
