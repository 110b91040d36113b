"""A custom resource to benchmark LISTs on (the hook for ``watchcache bench``): install a
CRD (``widgets.bench.watchcache.dev``, namespaced, a selectable ``spec.color`` and a
``color`` label) and seed N widgets through the API, so the bench's LIST scenarios can
run on ``/apis/bench.watchcache.dev/v1/widgets`` as they run on pods. A widget is
about as large as the bench's pods (~3.5 KB of JSON: labels, annotations, a list of
endpoints, a string map), so the two resources' figures compare like for like.

    python -m lab.crd_seed --server URL --count 5000 [--namespaces 10]

prints the collection path once the widgets exist.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

import aiohttp

__all__ = ["BENCH_CRD", "COLLECTION", "install_bench_crd", "seed_widgets", "widget"]

GROUP = "bench.watchcache.dev"
COLLECTION = f"/apis/{GROUP}/v1/widgets"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
COLORS = ("red", "green", "blue", "yellow")


def _object(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


BENCH_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "widgets", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "selectableFields": [{"jsonPath": ".spec.color"}],
                "schema": {
                    "openAPIV3Schema": _object(
                        spec=_object(
                            color={"type": "string"},
                            size={"type": "integer"},
                            notes={"type": "string"},
                            replicas={"type": "integer"},
                            endpoints={"type": "array", "items": _object(
                                name={"type": "string"}, host={"type": "string"},
                                port={"type": "integer"}, path={"type": "string"})},
                            config={"type": "object",
                                    "additionalProperties": {"type": "string"}},
                        )
                    )
                },
            }
        ],
    },
}


async def install_bench_crd(session: aiohttp.ClientSession, server: str) -> None:
    """Create the CRD (if absent) and wait until its resource is served."""
    async with session.post(server + CRDS, json=BENCH_CRD) as resp:
        if resp.status not in (201, 409):
            raise RuntimeError(f"creating the bench CRD: {resp.status} {await resp.text()}")
    async with asyncio.timeout(30):
        while True:
            async with session.get(server + COLLECTION + "?limit=1") as resp:
                if resp.status == 200:
                    return
            await asyncio.sleep(0.1)


def widget(i: int) -> dict[str, Any]:
    """Widget number ``i`` (its namespace is ``bench-cr-<i mod namespaces>``): ~3.5 KB."""
    color = COLORS[i % len(COLORS)]
    name = f"w-{i:06d}"
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Widget",
        "metadata": {
            "name": name,
            "labels": {"color": color, "app": "widget", "tier": f"tier-{i % 3}",
                       "release": f"r{i % 7}"},
            "annotations": {"bench.watchcache.dev/owner": f"team-{i % 11}",
                            "bench.watchcache.dev/checksum": f"{i:064x}"},
        },
        "spec": {
            "color": color, "size": i, "replicas": i % 5 + 1, "notes": "x" * 1000,
            "endpoints": [{"name": f"{name}-ep-{k}", "host": f"{name}.svc-{k}.example.internal",
                           "port": 8000 + k, "path": f"/api/v{k}/widgets/{name}"}
                          for k in range(8)],
            "config": {f"key-{k:02d}": f"value-{k:02d}-" + "v" * 48 for k in range(16)},
        },
    }  # fmt: skip


async def seed_widgets(
    session: aiohttp.ClientSession, server: str, count: int, namespaces: int = 10,
    start: int = 0,
) -> None:
    """Create widgets [``start``, ``count``) spread over ``namespaces`` namespaces
    (created if absent), a few requests at a time; existing ones (409) are kept."""
    for n in range(namespaces):
        body = {"metadata": {"name": f"bench-cr-{n}"}}
        async with session.post(server + "/api/v1/namespaces", json=body):
            pass
    semaphore = asyncio.Semaphore(16)

    async def one(i: int) -> None:
        ns = f"bench-cr-{i % namespaces}"
        body = widget(i)
        async with semaphore:
            url = f"{server}/apis/{GROUP}/v1/namespaces/{ns}/widgets"
            async with session.post(url, json=body) as resp:
                if resp.status not in (201, 409):
                    raise RuntimeError(f"creating a widget: {resp.status} {await resp.text()}")

    await asyncio.gather(*(one(i) for i in range(start, count)))


async def _main(server: str, count: int, namespaces: int) -> None:
    async with aiohttp.ClientSession() as session:
        await install_bench_crd(session, server)
        await seed_widgets(session, server, count, namespaces)
    print(COLLECTION)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.crd_seed")
    parser.add_argument("--server", required=True)
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--namespaces", type=int, default=10)
    args = parser.parse_args(argv)
    asyncio.run(_main(args.server.rstrip("/"), args.count, args.namespaces))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
