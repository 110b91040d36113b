"""The real kubectl and the official Python client's DynamicClient on a CRD, against a
cached and an uncached server: ``apply -f crd.yaml``, ``get <kind>`` (printer columns,
short name, category ``all``), ``explain <kind>.spec``, ``describe``, ``edit`` (a scripted
editor), ``scale``, ``get -w``, ``delete`` (instances go with the CRD). What kubectl
prints is what it prints against kube-apiserver for the same CRD (compared by hand)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, dynamic

from tests.e2e.test_kubectl_issue6 import (
    _line,
    failing,
    get_json,
    kc,
    kubectl_watch,
    namespace,
    ok,
    run,
    sed_editor,
)
from tests.integration.conftest import ServerProcess

__all__ = ["kc"]  # the module's kubeconfig fixture, shared

pytestmark = pytest.mark.etcd

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.e2e.example.com}
spec:
  group: e2e.example.com
  scope: Namespaced
  names: {plural: gadgets, kind: Gadget, shortNames: [gd], categories: [all]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    additionalPrinterColumns:
    - {name: Color, type: string, jsonPath: .spec.color}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas, priority: 1}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: What the gadget should be.
            properties:
              color: {type: string, description: The gadget's colour.}
              replicas: {type: integer}
          status:
            type: object
            properties:
              replicas: {type: integer}
"""


def gadget(name: str, ns: str, color: str = "red") -> str:
    return (
        "apiVersion: e2e.example.com/v1\nkind: Gadget\n"
        f"metadata: {{name: {name}, namespace: {ns}}}\n"
        f"spec: {{color: {color}, replicas: 1}}\n"
    )


def wait_served(kc: Path) -> None:
    deadline = time.monotonic() + 10
    while run(kc, "get", "gadgets", "-A").returncode != 0:
        assert time.monotonic() < deadline, "the CRD was not served within 10 s"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def crd(kc: Path) -> Iterator[str]:
    out = ok(kc, "apply", "-f", "-", stdin=CRD)
    assert (
        out.strip()
        == "customresourcedefinition.apiextensions.k8s.io/gadgets.e2e.example.com created"
    )
    wait_served(kc)
    yield "gadgets.e2e.example.com"


def test_get_explain_describe(kc: Path, crd: str) -> None:
    ns = namespace(kc, "crd-get")
    assert ok(kc, "apply", "-f", "-", stdin=gadget("g1", ns)).strip() == (
        "gadget.e2e.example.com/g1 created"
    )
    lines = ok(kc, "get", "gadgets", "-n", ns).splitlines()
    assert lines[0].split() == ["NAME", "COLOR", "AGE"]
    assert lines[1].split()[:2] == ["g1", "red"]
    wide = ok(kc, "get", "gd", "-n", ns, "-o", "wide").splitlines()
    assert wide[0].split() == ["NAME", "COLOR", "REPLICAS", "AGE"]
    assert "gadget.e2e.example.com/g1" in ok(kc, "get", "all", "-n", ns)
    assert ok(kc, "get", "crd").splitlines()[0].split() == ["NAME", "CREATED", "AT"]
    explained = ok(kc, "explain", "gadget.spec")
    assert "KIND:       Gadget" in explained
    assert "What the gadget should be." in explained
    assert "color\t<string>" in explained and "The gadget's colour." in explained
    described = ok(kc, "describe", "gadget", "g1", "-n", ns)
    assert "Kind:         Gadget" in described
    assert "API Version:  e2e.example.com/v1" in described


def test_edit_scale_and_delete(kc: Path, crd: str, tmp_path: Path) -> None:
    ns = namespace(kc, "crd-edit")
    ok(kc, "apply", "-f", "-", stdin=gadget("g2", ns))
    env = sed_editor(tmp_path, "s/color: red/color: green/")
    assert ok(kc, "edit", "gadget", "g2", "-n", ns, env=env).strip() == (
        "gadget.e2e.example.com/g2 edited"
    )
    assert get_json(kc, "gadget", "g2", "-n", ns)["spec"]["color"] == "green"
    # apply again: kubectl sends a merge patch (the OpenAPI has no strategic merge for CRs)
    ok(kc, "apply", "-f", "-", stdin=gadget("g2", ns, color="blue"))
    assert get_json(kc, "gadget", "g2", "-n", ns)["spec"]["color"] == "blue"
    ok(kc, "scale", "gadget", "g2", "-n", ns, "--replicas=4")
    assert get_json(kc, "gadget", "g2", "-n", ns)["spec"]["replicas"] == 4
    assert ok(kc, "delete", "gadget", "g2", "-n", ns).strip() == (
        f'gadget.e2e.example.com "g2" deleted from {ns} namespace'
    )
    assert 'gadgets.e2e.example.com "g2" not found' in failing(kc, "get", "gadget", "g2", "-n", ns)


async def test_get_watch_prints_printer_columns(kc: Path, crd: str) -> None:
    ns = namespace(kc, "crd-watch")
    proc = await kubectl_watch(kc, "gadgets", "-n", ns, "-w", "--output-watch-events")
    assert proc.stdout is not None
    try:
        await asyncio.to_thread(ok, kc, "apply", "-f", "-", stdin=gadget("gw", ns))
        assert (await _line(proc.stdout)).split() == ["EVENT", "NAME", "COLOR", "AGE"]
        assert (await _line(proc.stdout)).split()[:3] == ["ADDED", "gw", "red"]
        await asyncio.to_thread(ok, kc, "label", "gadget", "gw", "-n", ns, "seen=yes")
        assert (await _line(proc.stdout)).split()[:3] == ["MODIFIED", "gw", "red"]
    finally:
        proc.terminate()
        await proc.wait()


def test_dynamic_client(kc: Path, crd: str, e2e_server: ServerProcess) -> None:
    ns = namespace(kc, "crd-dynamic")
    with client.ApiClient(client.Configuration(host=e2e_server.url)) as api:
        dyn = dynamic.DynamicClient(api)  # type: ignore[no-untyped-call]
        gadgets = dyn.resources.get(api_version="e2e.example.com/v1", kind="Gadget")
        body = {
            "apiVersion": "e2e.example.com/v1", "kind": "Gadget",
            "metadata": {"name": "dg"}, "spec": {"color": "red"},
        }  # fmt: skip
        gadgets.create(body=body, namespace=ns)
        patched = gadgets.patch(
            name="dg", namespace=ns, body={"spec": {"color": "teal"}},
            content_type="application/merge-patch+json",
        )  # fmt: skip
        assert patched.spec.color == "teal"
        assert [g.metadata.name for g in gadgets.get(namespace=ns).items] == ["dg"]
        status = gadgets.status.patch(
            name="dg", namespace=ns, body={"status": {"replicas": 2}},
            content_type="application/merge-patch+json",
        )  # fmt: skip
        assert status.status.replicas == 2


def test_deleting_the_crd_deletes_its_instances(kc: Path, crd: str) -> None:
    """Last in the module: the CRD goes, with every gadget."""
    ns = namespace(kc, "crd-delete")
    ok(kc, "apply", "-f", "-", stdin=gadget("gone", ns))
    out = ok(kc, "delete", "crd", crd)
    assert out.strip() == f'customresourcedefinition.apiextensions.k8s.io "{crd}" deleted'
    assert f'"{crd}" not found' in failing(kc, "get", "crd", crd)
    err = failing(kc, "get", "gadgets", "-n", ns)
    # kubectl's words depend on whether its discovery cache still lists gadgets
    assert (
        'the server doesn\'t have a resource type "gadgets"' in err
        or "the server could not find the requested resource (get gadgets.e2e.example.com)" in err
    ), err
