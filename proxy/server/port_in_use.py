"""A listen address another process holds: the error the server (and the supervisor of
``--workers``, which binds the ports first) raises, and the exit code that tells a
launcher so without reading the log."""

from __future__ import annotations

__all__ = ["EXIT_PORT_IN_USE", "PortInUse"]

EXIT_PORT_IN_USE = 3


class PortInUse(OSError):
    """The listen address is taken by another process."""

    @classmethod
    def of(cls, err: OSError, host: str, port: int, flag: str) -> PortInUse:
        return cls(
            err.errno,
            f"{host}:{port} is already in use by another process; choose another port "
            f"with {flag} (0 picks a free one)",
        )
