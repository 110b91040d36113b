"""Where the loopback client sends its requests and how it proves who it is (upstream's
``SecureServingInfo.NewLoopbackClientConfig``).

- the address: the server's own listener, once it listens (its port may have been 0);
  an unspecified bind address (``0.0.0.0``, ``::``) is dialled on loopback, as upstream's
  ``LoopbackHostPort``; the secure port when there is one, else the plain port;
- TLS: the serving certificate itself is the only trusted one (pinned, partial chain,
  no host name check: the client dials the socket this process holds, so it is talking
  to itself; upstream makes a separate self-signed loopback certificate for the same
  end, served by SNI);
- the token: random per process (``proxy.authentication.loopback``).
"""

from __future__ import annotations

import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LoopbackConfig", "loopback_host", "pinned_tls_context"]

# the manager named in managedFields of internal writes (the User-Agent's first word),
# as kube-apiserver's own writes read "kube-apiserver"
USER_AGENT = "kube-apiserver/v1.37.0+watchcache (loopback)"


@dataclass(frozen=True)
class LoopbackConfig:
    base_url: str  # http(s)://host:port
    token: str
    ssl: ssl.SSLContext | bool = False  # False: plain HTTP
    user_agent: str = USER_AGENT
    timeout: float = 60.0

    def __repr__(self) -> str:  # never the token in a log line
        return f"LoopbackConfig({self.base_url!r})"


def loopback_host(bind_address: str) -> str:
    """The host to dial for a listener bound to ``bind_address`` (bracketed IPv6)."""
    try:
        ip = ipaddress.ip_address(bind_address)
    except ValueError:
        return bind_address or "127.0.0.1"  # a host name: dial it as given
    if ip.is_unspecified:
        ip = ipaddress.ip_address("::1" if ip.version == 6 else "127.0.0.1")
    return f"[{ip}]" if ip.version == 6 else str(ip)


def pinned_tls_context(cert_file: Path) -> ssl.SSLContext:
    """A client context that trusts exactly the serving certificate (chain) in ``cert_file``."""
    ctx = ssl.create_default_context(cafile=str(cert_file))
    ctx.check_hostname = False
    ctx.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    return ctx
