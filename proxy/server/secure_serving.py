"""The secure port's TLS: kube-apiserver's ``SecureServingOptions`` in Python's ``ssl``.

- ``--tls-cert-file``/``--tls-private-key-file``, or a self-signed certificate generated
  once in ``--cert-dir`` (``apiserver.crt``/``apiserver.key``);
- ``--client-ca-file``: client certificates are requested (not required) and verified
  against it; a verified certificate's subject is what the x509 authenticator reads;
- ``--tls-min-version`` (``VersionTLS12`` default, ``VersionTLS13``; 1.0/1.1 are refused
  as Go 1.22+ refuses them);
- ``--tls-cipher-suites``: IANA names (Go's), translated to OpenSSL's for TLS 1.2. TLS 1.3
  suites are accepted and, as in Go, not configurable.

``ConfigError`` for a missing or unreadable file, an unknown version or suite, with
kube-apiserver's wording where it has one.
"""

from __future__ import annotations

import ssl
from pathlib import Path

from proxy.options.settings import ConfigError, Settings
from proxy.server.certs import self_signed_serving_cert

__all__ = ["CIPHER_SUITES", "server_ssl_context", "serving_cert_paths"]

_VERSIONS = {
    "VersionTLS12": ssl.TLSVersion.TLSv1_2,
    "VersionTLS13": ssl.TLSVersion.TLSv1_3,
}

# IANA name -> OpenSSL name (TLS 1.2); TLS 1.3 suites map to None (always on)
CIPHER_SUITES: dict[str, str | None] = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_AES_128_GCM_SHA256": None,
    "TLS_AES_256_GCM_SHA384": None,
    "TLS_CHACHA20_POLY1305_SHA256": None,
}


def serving_cert_paths(settings: Settings) -> tuple[Path, Path]:
    """The serving certificate and key: the flags', or the generated self-signed pair."""
    if settings.tls_cert_file or settings.tls_private_key_file:
        if not (settings.tls_cert_file and settings.tls_private_key_file):
            raise ConfigError("--tls-cert-file and --tls-private-key-file must be given together")
        return Path(settings.tls_cert_file), Path(settings.tls_private_key_file)
    try:
        return self_signed_serving_cert(Path(settings.cert_dir))
    except OSError as e:
        raise ConfigError(
            f"unable to generate self signed cert in --cert-dir={settings.cert_dir}: {e}"
        ) from None


def _ciphers(names: tuple[str, ...]) -> str:
    openssl: list[str] = []
    for name in names:
        if name not in CIPHER_SUITES:
            raise ConfigError(f"Cipher suite {name} not supported or doesn't exist")
        mapped = CIPHER_SUITES[name]
        if mapped is not None and mapped not in openssl:
            openssl.append(mapped)
    return ":".join(openssl)


def server_ssl_context(settings: Settings) -> ssl.SSLContext:
    """The secure port's context (see the module docstring)."""
    if settings.tls_min_version not in _VERSIONS:
        raise ConfigError(
            f"unexpected tls version {settings.tls_min_version!r} "
            f"(supported: {', '.join(_VERSIONS)})"
        )
    cert, key = serving_cert_paths(settings)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = _VERSIONS[settings.tls_min_version]
    try:
        ctx.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(f"unable to load server certificate {cert}: {e}") from None
    if settings.tls_cipher_suites:
        ciphers = _ciphers(settings.tls_cipher_suites)
        if ciphers:
            ctx.set_ciphers(ciphers)
    # the client CA and the front proxy's (--requestheader-client-ca-file): each
    # authenticator then checks which one signed the certificate
    ca_files = [f for f in (settings.client_ca_file, settings.requestheader_client_ca_file) if f]
    if ca_files:
        for ca_file in ca_files:
            try:
                ctx.load_verify_locations(cafile=ca_file)
            except (OSError, ssl.SSLError) as e:
                raise ConfigError(f"unable to load client CA file {ca_file}: {e}") from None
        # requested, not required: bearer tokens and anonymous requests carry none
        ctx.verify_mode = ssl.CERT_OPTIONAL
    else:
        ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx
