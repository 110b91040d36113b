"""Which ports are served, the secure port's TLS settings, the self-signed serving
certificate, and the protobuf bodies of the review APIs."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from cryptography import x509

from proxy import apierrors
from proxy.endpoints import decoding, negotiation
from proxy.kube.resources import REVIEWS, build_registry
from proxy.server.certs import self_signed_serving_cert
from proxy.server.secure_serving import server_ssl_context
from proxy.server.settings import ConfigError, load_settings


def test_ports_plain_only_secure_by_default_or_both() -> None:
    plain = load_settings(["--etcd-servers=x", "--port=8080"])
    assert (plain.port, plain.secure_port) == (8080, None)  # today's invocation, unchanged
    default = load_settings(["--etcd-servers=x"])
    assert (default.port, default.secure_port) == (None, 6443)
    both = load_settings(["--etcd-servers=x", "--port=0", "--secure-port=0"])
    assert (both.port, both.secure_port) == (0, 0)
    assert default.authorization_mode == ("RBAC",) and default.anonymous_auth is True
    chain = load_settings(["--etcd-servers=x", "--authorization-mode=RBAC,AlwaysDeny"])
    assert chain.authorization_mode == ("RBAC", "AlwaysDeny")


def test_self_signed_certificate_is_generated_once(tmp_path: Path) -> None:
    cert, key = self_signed_serving_cert(tmp_path)
    first = cert.read_bytes()
    assert self_signed_serving_cert(tmp_path) == (cert, key) and cert.read_bytes() == first
    leaf = x509.load_pem_x509_certificates(first)[0]
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "kubernetes.default.svc" in names.get_values_for_type(x509.DNSName)
    assert key.stat().st_mode & 0o077 == 0


def test_tls_context_from_flags(tmp_path: Path) -> None:
    base = ["--etcd-servers=x", f"--cert-dir={tmp_path}"]
    ctx = server_ssl_context(load_settings([*base, "--tls-min-version=VersionTLS13"]))
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_3 and ctx.verify_mode == ssl.CERT_NONE
    with pytest.raises(ConfigError, match="Cipher suite TLS_NOPE not supported or doesn't exist"):
        server_ssl_context(load_settings([*base, "--tls-cipher-suites=TLS_NOPE"]))
    with pytest.raises(ConfigError, match="unexpected tls version"):
        server_ssl_context(load_settings([*base, "--tls-min-version=VersionTLS10"]))
    with pytest.raises(ConfigError, match="must be given together"):
        server_ssl_context(load_settings([*base, f"--tls-cert-file={tmp_path / 'a'}"]))


def _field(number: int, payload: bytes) -> bytes:
    return bytes([number << 3 | 2, len(payload)]) + payload


def test_protobuf_review_bodies_use_the_general_decoder() -> None:
    # kubectl auth can-i / create token send these as protobuf, without typeMeta
    pb = negotiation.PROTOBUF_TYPE
    attrs = _field(1, b"default") + _field(2, b"list") + _field(5, b"pods")
    body = b"k8s\x00" + _field(2, _field(2, _field(1, attrs)))
    registry = build_registry(REVIEWS)
    resource = registry.lookup("authorization.k8s.io", "selfsubjectaccessreviews")
    assert resource is not None
    review = decoding.decode_object(body, pb, resource)
    assert (review["apiVersion"], review["kind"]) == (
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
    )
    assert review["spec"] == {
        "resourceAttributes": {"namespace": "default", "verb": "list", "resource": "pods"}
    }
    token = b"k8s\x00" + _field(2, _field(2, _field(1, b"api")))
    request = decoding.decode_kind(token, pb, "authentication.k8s.io/v1", "TokenRequest")
    assert request["kind"] == "TokenRequest" and request["spec"]["audiences"] == ["api"]
    for bad in (b"k8s\x00" + bytes([0x12, 0x7F]), b"{}"):
        with pytest.raises(apierrors.StatusError) as err:
            decoding.decode_object(bad, pb, resource)
        assert err.value.code == 400
        with pytest.raises(apierrors.StatusError) as err:
            decoding.decode_kind(bad, pb, "authentication.k8s.io/v1", "TokenRequest")
        assert err.value.code == 400
