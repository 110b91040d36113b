"""What the CRD suites share: a CRD body like the ones of upstream's integration tests
(``apiextensions-apiserver/test/integration/fixtures``), and waiting until one is
served."""

from __future__ import annotations

import asyncio
import copy
import uuid
from typing import Any

import aiohttp

__all__ = ["JSON", "crd_body", "install_crd", "unique_group", "wait_gone"]

JSON = dict[str, Any]

_SCHEMA: JSON = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "color": {"type": "string"},
                "replicas": {"type": "integer"},
            },
        },
        "status": {
            "type": "object",
            "properties": {"replicas": {"type": "integer"}, "selector": {"type": "string"}},
        },
    },
}


def unique_group() -> str:
    return f"t{uuid.uuid4().hex[:8]}.example.com"


def crd_body(
    group: str,
    plural: str = "widgets",
    kind: str = "Widget",
    scope: str = "Namespaced",
    *,
    short_names: tuple[str, ...] = ("wd",),
    beta: bool = False,
) -> JSON:
    """A CRD with /status, /scale, a selectable field and printer columns (v1, storage);
    with ``beta`` also a served, deprecated ``v1beta1``."""
    v1: JSON = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": copy.deepcopy(_SCHEMA)},
        "subresources": {
            "status": {},
            "scale": {
                "specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".status.selector",
            },
        },
        "selectableFields": [{"jsonPath": ".spec.color"}],
        "additionalPrinterColumns": [
            {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
            {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas", "priority": 1},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ],
    }
    versions = [v1]
    if beta:
        versions.append(
            {
                "name": "v1beta1",
                "served": True,
                "storage": False,
                "deprecated": True,
                "schema": {"openAPIV3Schema": copy.deepcopy(_SCHEMA)},
            }
        )
    names: JSON = {"plural": plural, "kind": kind, "categories": ["all"]}
    if short_names:
        names["shortNames"] = list(short_names)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": scope, "names": names, "versions": versions},
    }


CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


async def install_crd(http: aiohttp.ClientSession, body: JSON) -> JSON:
    """Create ``body`` and wait until it is Established and its resource is served
    (its collection answers 200); the CRD as it is then."""
    async with http.post(CRDS, json=body) as resp:
        assert resp.status == 201, await resp.text()
    group = body["spec"]["group"]
    plural = body["spec"]["names"]["plural"]
    version = body["spec"]["versions"][0]["name"]
    async with asyncio.timeout(10):
        while True:
            async with http.get(f"/apis/{group}/{version}/{plural}") as resp:
                if resp.status == 200:
                    break
            await asyncio.sleep(0.05)
    # served from NamesAccepted on, Established written after (as upstream's
    # establishing controller): the CRD once both are in, so that a caller's update of
    # it does not race the controller's status write
    return await wait_established(http, body["metadata"]["name"])


async def wait_established(http: aiohttp.ClientSession, name: str) -> JSON:
    """Wait (up to 20 s) until the CRD ``name`` is Established; the CRD as it is then."""
    async with asyncio.timeout(20):
        while True:
            async with http.get(f"{CRDS}/{name}") as resp:
                crd: JSON = await resp.json()
            conditions = (crd.get("status") or {}).get("conditions") or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                return crd
            await asyncio.sleep(0.05)


async def wait_gone(http: aiohttp.ClientSession, path: str) -> None:
    """Wait (up to 15 s) until ``path`` answers 404."""
    async with asyncio.timeout(15):
        while True:
            async with http.get(path) as resp:
                if resp.status == 404:
                    return
            await asyncio.sleep(0.05)
