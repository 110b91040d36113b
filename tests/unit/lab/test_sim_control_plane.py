"""The pure rules of the simulated control plane: a budget's scaled counts, the node
lifecycle controller's taints, zone states and tainting rates, the taint eviction's
tolerations, and the CSR signer's rules per signer."""

from __future__ import annotations

import datetime as dt

import pytest
from cryptography import x509

from lab.sim.certificate_signer import SignerRefused, sign_request
from lab.sim.disruption import ExpectedCountFailed, scaled
from lab.sim.node_lifecycle import taints_for, tolerated_for
from lab.sim.zone_eviction import (
    FULL,
    NORMAL,
    PARTIAL,
    EvictionRates,
    TokenBucket,
    zone_of,
    zone_state,
)
from proxy.server.certs import new_ca
from tests.csr import csr_object, new_request


@pytest.mark.parametrize(("value", "total", "want"), [
    (2, 10, 2), ("50%", 3, 2), ("0%", 5, 0), ("100%", 4, 4), ("34%", 3, 2)])  # fmt: skip
def test_scaled_rounds_up(value: int | str, total: int, want: int) -> None:
    assert scaled(value, total) == want


def test_scaled_refuses_what_is_no_percentage() -> None:
    with pytest.raises(ExpectedCountFailed, match='invalid value "half"'):
        scaled("half", 4)


def test_taints_follow_the_ready_condition() -> None:
    other = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
    unknown = taints_for("Unknown", [other], "T1")
    assert unknown == [other, {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
                       {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute",
                        "timeAdded": "T1"}]  # fmt: skip
    assert taints_for("Unknown", unknown, "T2") == unknown  # kept, timeAdded too
    not_ready = taints_for("False", unknown, "T3")
    assert {t["key"] for t in not_ready} == {"dedicated", "node.kubernetes.io/not-ready"}
    assert taints_for("True", not_ready, "T4") == [other]


UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}


@pytest.mark.parametrize(("tolerations", "want"), [
    ([], 0.0),
    ([{"key": "other", "operator": "Exists", "effect": "NoExecute"}], 0.0),
    ([{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
       "tolerationSeconds": 300}], 300.0),
    ([{"operator": "Exists"}], None),  # tolerates everything, forever
    ([{"operator": "Exists", "tolerationSeconds": 30},
      {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
       "tolerationSeconds": 5}], 5.0),
])  # fmt: skip
def test_tolerated_for(tolerations: list[dict[str, object]], want: float | None) -> None:
    assert tolerated_for({"spec": {"tolerations": tolerations}}, [UNREACHABLE]) == want


def _csr(
    signer: str, usages: list[str], cn: str, org: str, *names: x509.GeneralName
) -> dict[str, object]:
    return csr_object(cn, new_request(cn, org, *names)[1], usages, signer, 3600)


SERVING = "kubernetes.io/kubelet-serving"
KUBELET_CLIENT = "kubernetes.io/kube-apiserver-client-kubelet"
SERVER_USAGES = ["digital signature", "server auth"]


def test_kubelet_serving_certificate() -> None:
    ca = new_ca("test-ca")
    now = dt.datetime(2026, 12, 2, tzinfo=dt.UTC)
    csr = _csr(SERVING, SERVER_USAGES, "system:node:node-000", "system:nodes",
               x509.DNSName("node-000"))  # fmt: skip
    cert = x509.load_pem_x509_certificate(sign_request(ca, csr, now))
    cert.verify_directly_issued_by(x509.load_pem_x509_certificate(ca.cert_pem))
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["node-000"]
    assert cert.not_valid_after_utc - now == dt.timedelta(hours=1)
    assert cert.extensions.get_extension_for_class(x509.KeyUsage).value.digital_signature


@pytest.mark.parametrize(("csr", "message"), [
    (lambda: _csr(SERVING, SERVER_USAGES, "node-000", "system:nodes", x509.DNSName("n")),
     "subject common name does not begin with system:node:"),
    (lambda: _csr(SERVING, SERVER_USAGES, "system:node:n", "dev", x509.DNSName("n")),
     "subject organization is not system:nodes"),
    (lambda: _csr(SERVING, SERVER_USAGES, "system:node:n", "system:nodes"),
     "DNS or IP subjectAltName is required"),
    (lambda: _csr(SERVING, ["server auth"], "system:node:n", "system:nodes",
                  x509.DNSName("n"), x509.RFC822Name("a@b.c")),
     "Email subjectAltNames are not allowed"),
    (lambda: _csr(SERVING, ["client auth"], "system:node:n", "system:nodes", x509.DNSName("n")),
     "invalid usage for serving certificate: client auth"),
    (lambda: _csr(KUBELET_CLIENT, ["client auth"], "system:node:n", "system:nodes",
                  x509.DNSName("n")), "subjectAltNames are not allowed"),
    (lambda: _csr("kubernetes.io/kube-apiserver-client", ["digital signature"], "jane", "dev"),
     "missing required usage for client certificate: client auth"),
])  # fmt: skip
def test_signer_rules(csr: object, message: str) -> None:
    assert callable(csr)
    with pytest.raises(SignerRefused) as refused:
        sign_request(new_ca("test-ca"), csr())
    assert str(refused.value) == message


def test_a_client_auth_only_certificate_has_no_key_usage() -> None:
    """Go omits a KeyUsage of no bits; an empty one makes TLS stacks refuse the
    certificate (the lab's server closed the connection of such a client)."""
    csr = _csr("kubernetes.io/kube-apiserver-client", ["client auth"], "jane", "dev")
    cert = x509.load_pem_x509_certificate(sign_request(new_ca("test-ca"), csr))
    with pytest.raises(x509.ExtensionNotFound):
        cert.extensions.get_extension_for_class(x509.KeyUsage)
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usages) == [x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]


def test_no_execute_waits_for_the_zone_limiter_and_swaps_at_once() -> None:
    waiting = taints_for("Unknown", [], "T1", no_execute=None)
    assert waiting == [{"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"}]
    tainted = taints_for("Unknown", waiting, "T2")
    assert tainted[-1] == {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute",
                           "timeAdded": "T2"}  # fmt: skip
    swapped = taints_for("False", tainted, "T3", no_execute=None)  # no token needed
    assert {(t["key"], t["effect"]) for t in swapped} == {
        ("node.kubernetes.io/not-ready", "NoSchedule"),
        ("node.kubernetes.io/not-ready", "NoExecute")}  # fmt: skip
    assert taints_for("False", swapped, "T4", no_execute=False) == [
        {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]  # master disruption


@pytest.mark.parametrize(("ready", "want"), [
    (["True", "True", "Unknown"], NORMAL), (["Unknown"], FULL), (["False", "Unknown"], FULL),
    (["True", "Unknown", "Unknown"], NORMAL),  # two not Ready: never partial
    (["True", "True", "Unknown", "Unknown", "Unknown"], PARTIAL),  # 3 of 5 >= 0.55
    (["True"] * 3 + ["Unknown"] * 3, NORMAL),  # 0.5 < 0.55
])  # fmt: skip
def test_zone_state(ready: list[str], want: str) -> None:
    assert zone_state(ready, 0.55) == want


def test_zone_rates_and_keys() -> None:
    rates = EvictionRates()
    assert rates.for_zone(NORMAL, 3) == rates.for_zone(FULL, 3) == 0.1
    assert rates.for_zone(PARTIAL, 50) == 0.0  # a small zone: no eviction
    assert rates.for_zone(PARTIAL, 51) == 0.01
    assert zone_of({"metadata": {"labels": {"topology.kubernetes.io/zone": "a"}}}) == ":\x00:a"
    assert zone_of({"metadata": {}}) == ""


def test_token_bucket_burst_one_and_swap() -> None:
    bucket = TokenBucket(0.1, now=0.0)
    assert bucket.try_accept(0.0) and not bucket.try_accept(5.0)
    assert bucket.try_accept(10.0)  # one token per 10 s
    same = bucket.swap(0.1, 10.0)
    assert same is bucket
    stopped = bucket.swap(0.0, 10.0)
    assert not stopped.try_accept(1000.0)  # NewFakeNeverRateLimiter
    drained = bucket.swap(1.0, 10.0)  # the old one had no token: the new one starts empty
    assert not drained.try_accept(10.0) and drained.try_accept(11.0)
