"""The lab's CustomResourceDefinition demo (``watchcache lab demo crd``): a CRD is
served within moments, with discovery and printer columns; its custom resources are
read from etcd or from their own watch cache exactly as pods are, and watched from the
cache; deleting the CRD deletes its instances (the ``customresourcecleanup`` finalizer)
and stops serving it.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from lab.observe import watch

if TYPE_CHECKING:
    from lab.demo_context import DemoContext

__all__ = ["crd"]

GROUP = "lab.watchcache.io"
NAME = f"gizmos.{GROUP}"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
GIZMOS = f"/apis/{GROUP}/v1/namespaces/default/gizmos"
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": NAME},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "gizmos", "kind": "Gizmo", "shortNames": ["gz"]},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"}
                ],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}
                        },
                    }
                },
            }
        ],
    },
}
COUNT = 20


def _gizmo(i: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Gizmo",
        "metadata": {"name": f"gizmo-{i:02d}"},
        "spec": {"size": i},
    }


async def _until(ctx: DemoContext, path: str, status: int, within: float = 15.0) -> float:
    """Seconds until ``path`` answers ``status`` (the deadline's if it never does)."""
    start = time.monotonic()
    while time.monotonic() - start < within:
        if (await ctx.get(path, show=False)).status == status:
            break
        await asyncio.sleep(0.01)
    return time.monotonic() - start


async def crd(ctx: DemoContext) -> None:
    t = ctx.t
    t.title(f"a CustomResourceDefinition ({NAME}): served, cached, deleted")
    created = await ctx.send("POST", CRDS, CRD)
    t.check("the CRD is created", created.status in (201, 409), str(created.status))
    took = await _until(ctx, GIZMOS + "?limit=1", 200)
    t.check("its resource is served within a second", took < 1.0, f"{took * 1000:.0f} ms")
    listing = await ctx.get(f"/apis/{GROUP}/v1")
    entry = [r for r in (listing.body or {}).get("resources", []) if r.get("name") == "gizmos"]
    t.check("discovery lists gizmos with short name gz",
            bool(entry) and entry[0].get("shortNames") == ["gz"])  # fmt: skip
    for i in range(COUNT):  # the first two shown, the rest quietly
        if i < 2:
            await ctx.send("POST", GIZMOS, _gizmo(i))
        else:
            async with ctx.session.post(ctx.base + GIZMOS, json=_gizmo(i)):
                pass
    etcd = await ctx.get(GIZMOS)
    from_etcd = etcd.served_from == "etcd" and len(etcd.items) == COUNT
    t.check(f"RV unset: {COUNT} gizmos from etcd", from_etcd, str(etcd.served_from))
    cache = await ctx.get(GIZMOS + "?resourceVersion=0")
    for _ in range(100):  # RV=0 is "any": the cache may be a few ms behind the last create
        if len(cache.items) == COUNT:
            break
        await asyncio.sleep(0.05)
        cache = await ctx.get(GIZMOS + "?resourceVersion=0", show=False)
    from_cache = cache.served_from == "cache" and len(cache.items) == COUNT
    t.check(f"RV=0: {COUNT} gizmos from the CRD's own watch cache", from_cache,
            str(cache.served_from))  # fmt: skip
    rv = etcd.metadata.get("resourceVersion")
    async with watch(ctx.session, ctx.base, f"{GIZMOS}?watch=1&resourceVersion={rv}") as stream:
        await ctx.send("POST", GIZMOS, _gizmo(COUNT))
        event = await stream.next(10)
        name = ((event or {}).get("object") or {}).get("metadata", {}).get("name")
        added = (event or {}).get("type") == "ADDED" and name == f"gizmo-{COUNT:02d}"
        t.check("a watch from the cache sees the new gizmo", added, str(name))
        deleted = await ctx.send("DELETE", f"{CRDS}/{NAME}", None)
        finalizers = ((deleted.body or {}).get("metadata") or {}).get("finalizers")
        kept = finalizers == ["customresourcecleanup.apiextensions.k8s.io"]
        t.check("DELETE keeps the CRD until its instances are gone (finalizer)", kept,
                str(finalizers))  # fmt: skip
        took = await _until(ctx, f"{CRDS}/{NAME}", 404)
        t.check("then the CRD is gone", (await ctx.get(f"{CRDS}/{NAME}")).status == 404,
                f"{took:.1f} s")  # fmt: skip
    gone = await ctx.get(GIZMOS)
    t.check("and gizmos are no longer served", gone.status == 404, str(gone.status))
    t.explain(f"a CRD adds a resource at run time with its own etcd prefix (/registry/{GROUP}/"
              "gizmos/) and its own watch cache: RV=0 reads and watches come from memory as "
              "for pods; deleting it deletes every instance first.")  # fmt: skip
