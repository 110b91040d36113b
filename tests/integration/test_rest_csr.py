"""CertificateSigningRequests as kube-apiserver's strategies keep them: created with the
requester's identity and no status; ``/approval`` changes only the conditions, with
Approved and Denied exclusive and never removed; ``/status`` (the signer's) may not decide
and may not change an issued certificate."""

from __future__ import annotations

import copy
from typing import Any

import aiohttp
import pytest

from tests.integration.conftest import create

pytestmark = pytest.mark.etcd

JSON = dict[str, Any]
CSRS = "/apis/certificates.k8s.io/v1/certificatesigningrequests"


async def _put(http: aiohttp.ClientSession, path: str, body: JSON) -> tuple[int, JSON]:
    async with http.put(path, json=body) as resp:
        data: JSON = await resp.json()
        return resp.status, data


def _condition(kind: str) -> JSON:
    return {"type": kind, "status": "True", "reason": "Test", "message": "by the test"}


async def test_csr_routes(http: aiohttp.ClientSession, namespace: str) -> None:
    name = f"csr-{namespace}"
    csr = await create(http, CSRS, {
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": "AAAA", "signerName": "example.com/signer", "usages": ["client auth"],
                 "username": "someone-else", "groups": ["system:masters"]},
        "status": {"certificate": "AAAA"}})  # fmt: skip
    # the plain port's user (the loopback client's identity), not what the body claimed
    assert csr["spec"]["username"] not in ("", "someone-else")
    assert "system:authenticated" in csr["spec"]["groups"]
    assert csr["status"] == {}

    approved = copy.deepcopy(csr)
    approved["spec"]["usages"] = ["server auth"]  # not the approval's to change
    approved["status"] = {"conditions": [_condition("Approved")], "certificate": "AAAA"}
    code, body = await _put(http, f"{CSRS}/{name}/approval", approved)
    assert code == 200, body
    assert body["spec"]["usages"] == ["client auth"] and "certificate" not in body["status"]
    (condition,) = body["status"]["conditions"]
    assert condition["lastUpdateTime"] and condition["lastTransitionTime"]

    both = copy.deepcopy(body)
    both["status"]["conditions"].append(_condition("Denied"))
    code, status = await _put(http, f"{CSRS}/{name}/approval", both)
    assert code == 422 and status["message"] == (
        f'CertificateSigningRequest.certificates.k8s.io "{name}" is invalid: '
        'status.conditions[1].type: Invalid value: "Denied": Approved and Denied conditions '
        "are mutually exclusive")  # fmt: skip
    undecided = copy.deepcopy(body)
    undecided["status"]["conditions"] = []
    code, status = await _put(http, f"{CSRS}/{name}/approval", undecided)
    assert code == 422
    assert 'updates may not remove a condition of type "Approved"' in status["message"]

    issued = copy.deepcopy(body)
    issued["status"]["certificate"] = "QUJD"
    code, body = await _put(http, f"{CSRS}/{name}/status", issued)
    assert code == 200 and body["status"]["certificate"] == "QUJD"
    changed = copy.deepcopy(body)
    changed["status"]["certificate"] = "REVG"
    code, status = await _put(http, f"{CSRS}/{name}/status", changed)
    assert code == 422
    assert "updates may not modify existing certificate content" in status["message"]
    denied = copy.deepcopy(body)
    denied["status"]["conditions"] = [_condition("Denied")]
    code, status = await _put(http, f"{CSRS}/{name}/status", denied)
    assert code == 422 and 'updates may not add a condition of type "Denied"' in status["message"]
