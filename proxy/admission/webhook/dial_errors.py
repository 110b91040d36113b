"""How Go's dialer and TLS client word a failed connection (``dial tcp H:P: connect:
connection refused``, ``tls: failed to verify certificate: x509: certificate signed by
unknown authority``): the words kube-apiserver's messages carry when a webhook or an
aggregated API server cannot be reached, which clients and tests match. Shared by the
webhook client and the aggregator's proxy and availability checks.
"""

from __future__ import annotations

import errno
import re
import ssl

import aiohttp

__all__ = ["go_dial_error"]

# asyncio names the address it dialled ("Connect call failed ('127.0.0.1', 443)")
_DIALLED = re.compile(r"\('([^']+)', (\d+)")


# OpenSSL's verify codes with Go's crypto/x509 words for them
_UNKNOWN_AUTHORITY = frozenset({2, 18, 19, 20, 21})  # no issuer / self-signed / untrusted


def _x509_words(err: ssl.SSLCertVerificationError) -> str:
    if err.verify_code in _UNKNOWN_AUTHORITY:
        return "x509: certificate signed by unknown authority"
    if err.verify_code == 10:
        return "x509: certificate has expired or is not yet valid"
    return f"x509: {err.verify_message}"


def go_dial_error(host: str, port: int, err: BaseException) -> str:
    """The words Go's dialer and TLS client use for the common failures (the body
    upstream's proxy answers with)."""
    os_error = getattr(err, "os_error", None) or err.__cause__ or err
    if isinstance(os_error, ssl.SSLCertVerificationError):
        return f"tls: failed to verify certificate: {_x509_words(os_error)}"
    if isinstance(err, aiohttp.ClientSSLError | ssl.SSLError):
        return f"remote error: tls: {os_error}"
    # asyncio names the address it dialled ("Connect call failed ('127.0.0.1', 443)"):
    # Go's message names the resolved address too
    dialled = _DIALLED.search(str(os_error))
    if dialled is not None:
        host, port = dialled[1], int(dialled[2])
    if getattr(os_error, "errno", None) == errno.ECONNREFUSED:
        return f"dial tcp {host}:{port}: connect: connection refused"
    return f"dial tcp {host}:{port}: {getattr(os_error, 'strerror', None) or os_error}"
