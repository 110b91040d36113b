"""The protobuf schema's one error, in a module of its own so that both the schema
loader and the extension compiler it calls can raise it."""

from __future__ import annotations

__all__ = ["SchemaUnavailable"]


class SchemaUnavailable(RuntimeError):
    """The schema is not in the cache and could not be built."""
