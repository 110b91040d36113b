"""``watchcache lab demo crd-vs-aggregation``: the two ways to extend the API, asked the
same question — how much CPU and memory does each pod of one namespace use?

- **API aggregation**: ``metrics.k8s.io/v1beta1`` PodMetrics (what ``kubectl top pods``
  reads), served by the lab's extension API server (``lab.extension``, in
  metrics-server's place) behind the APIService ``v1beta1.metrics.k8s.io``. watchcache
  authenticates and authorizes the request, then proxies it; the answer is computed
  elsewhere on each request and nothing is stored in etcd.
- **A CustomResourceDefinition**: ``podusages.lab.watchcache.io``, one PodUsage custom
  resource per pod, written here as a controller would persist the same numbers: each is
  an etcd key, watch-cached and served by watchcache itself like any built-in.

Then each one's costs (etcd keys and bytes, writes, the hop, who serves it) and the two
discovery documents side by side. The CR half uses the documented
``apiextensions.k8s.io/v1`` API; on a server that does not serve CRDs yet, it says so
and is skipped (it is not counted as a failure).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING, Any

from lab import seed
from lab.extension.launcher import APISERVICE_NAME
from lab.extension.metrics import GROUP as METRICS_GROUP
from lab.extension.metrics import VERSION as METRICS_VERSION

if TYPE_CHECKING:
    from lab.demo_context import DemoContext

__all__ = ["crd_vs_aggregation"]

JSON = dict[str, Any]
CR_GROUP, CR_PLURAL, CR_KIND = "lab.watchcache.io", "podusages", "PodUsage"
CRD_NAME = f"{CR_PLURAL}.{CR_GROUP}"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def crd_object() -> JSON:
    """The PodUsage CRD (apiextensions.k8s.io/v1), with printer columns like kubectl top's."""
    usage = {"type": "object", "additionalProperties": {"type": "string"}}
    container = {"type": "object", "properties": {"name": {"type": "string"}, "usage": usage}}
    schema = {"type": "object", "properties": {
        "window": {"type": "string"},
        "containers": {"type": "array", "items": container}}}  # fmt: skip
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME},
        "spec": {
            "group": CR_GROUP,
            "scope": "Namespaced",
            "names": {"plural": CR_PLURAL, "singular": "podusage", "kind": CR_KIND,
                      "shortNames": ["pu"]},
            "versions": [{"name": "v1", "served": True, "storage": True,
                          "schema": {"openAPIV3Schema": schema},
                          "additionalPrinterColumns": [
                              {"name": "CPU", "type": "string",
                               "jsonPath": ".containers[0].usage.cpu"},
                              {"name": "Memory", "type": "string",
                               "jsonPath": ".containers[0].usage.memory"}]}],
        },
    }  # fmt: skip


def _cr(metrics: JSON) -> JSON:
    meta = metrics["metadata"]
    return {"apiVersion": f"{CR_GROUP}/v1", "kind": CR_KIND,
            "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
            "window": metrics.get("window"), "containers": metrics.get("containers")}  # fmt: skip


async def _etcd_keys(ctx: DemoContext, sub: str) -> tuple[int, int]:
    """(keys, value bytes) under ``<prefix>/<sub>``."""
    from etcdclient import EtcdClient

    async with EtcdClient(ctx.state.etcd_endpoints) as etcd:
        rng = await etcd.list_prefix(f"{ctx.state.prefix}/{sub}".encode())
    return len(rng.kvs), sum(len(kv.value) for kv in rng.kvs)


async def _aggregated_half(ctx: DemoContext, ns: str) -> JSON | None:
    t = ctx.t
    t.say("")
    t.say("1. API aggregation: proxied to the extension server, computed there")
    svc = await ctx.get(f"/apis/apiregistration.k8s.io/v1/apiservices/{APISERVICE_NAME}")
    conds = (
        (svc.body or {}).get("status", {}).get("conditions", [{}]) if svc.status == 200 else [{}]
    )
    available = conds[0].get("status") == "True"
    t.check(f"APIService {APISERVICE_NAME} is Available", available,
            f"{conds[0].get('reason')}: {conds[0].get('message')}")  # fmt: skip
    if not available:
        return None
    path = f"/apis/{METRICS_GROUP}/{METRICS_VERSION}/namespaces/{ns}/pods"
    answer = await ctx.get(path)
    t.check("answered by the extension server, through watchcache's proxy",
            answer.status == 200 and "X-Extension-Seen-User" in answer.headers,
            f"it saw user {answer.headers.get('X-Extension-Seen-User')!r}")  # fmt: skip
    t.check("not served from watchcache's cache (no X-Watchcache-Served-From): computed",
            answer.served_from is None)  # fmt: skip
    pods = await ctx.get(f"/api/v1/namespaces/{ns}/pods?resourceVersion=0")
    t.say(f"  cost: {answer.seconds * 1000:.0f} ms for the proxied answer: a TLS hop, then the "
          f"extension server's own RV=0 list of the pods (from the watch cache above: "
          f"{pods.seconds * 1000:.0f} ms)")  # fmt: skip
    keys, _ = await _etcd_keys(ctx, f"{METRICS_GROUP}/")
    t.check(f"nothing stored in etcd under {ctx.state.prefix}/{METRICS_GROUP}/", keys == 0,
            f"{keys} keys")  # fmt: skip
    return answer.body if isinstance(answer.body, dict) else None


async def _established(ctx: DemoContext) -> bool:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        o = await ctx.get(f"{CRDS}/{CRD_NAME}", show=False)
        conds = (o.body or {}).get("status", {}).get("conditions", []) if o.status == 200 else []
        if any(c.get("type") == "Established" and c.get("status") == "True" for c in conds):
            return True
        await asyncio.sleep(0.1)  # the CRD controller's condition: nothing to await here
    return False


async def _crd_half(ctx: DemoContext, ns: str, metrics: JSON) -> bool:
    """The CR half; False when the server does not serve CRDs (skipped, said)."""
    t = ctx.t
    t.say("")
    t.say("2. a CustomResourceDefinition: stored in etcd, watch-cached, served by watchcache")
    created = await ctx.send("POST", CRDS, crd_object())
    if created.status == 404:
        t.say("  this server does not serve apiextensions.k8s.io/v1 yet (the CRD part of "
              "issue 14 lands separately): the CR half is skipped")  # fmt: skip
        return False
    t.check("the CRD is Established", created.status in (201, 409) and await _established(ctx))
    items = metrics.get("items") or []
    t0 = time.perf_counter()
    writes = [await ctx.send("POST", f"/apis/{CR_GROUP}/v1/namespaces/{ns}/{CR_PLURAL}", _cr(m))
              for m in items]  # fmt: skip
    seconds = time.perf_counter() - t0
    t.check(f"{len(items)} PodUsage objects written (one etcd write each)",
            all(w.status == 201 for w in writes), f"{seconds * 1000:.0f} ms")  # fmt: skip
    listed = await ctx.get(f"/apis/{CR_GROUP}/v1/namespaces/{ns}/{CR_PLURAL}?resourceVersion=0")
    t.check("the custom resources are served from watchcache's watch cache",
            listed.served_from == "cache" and len(listed.items) == len(items),
            f"served-from={listed.served_from}")  # fmt: skip
    keys, nbytes = await _etcd_keys(ctx, f"{CR_GROUP}/{CR_PLURAL}/{ns}/")
    t.check(f"each is a key in etcd under {ctx.state.prefix}/{CR_GROUP}/{CR_PLURAL}/{ns}/",
            keys == len(items), f"{keys} keys, {nbytes} bytes")  # fmt: skip
    return True


async def _discovery(ctx: DemoContext, with_crd: bool) -> None:
    t = ctx.t
    t.say("")
    t.say("3. the discovery documents side by side (aggregated discovery, /apis)")
    o = await request_aggregated(ctx)
    items = {i["metadata"]["name"]: i for i in (o or {}).get("items", [])}
    for group in (METRICS_GROUP, CR_GROUP):
        if group in items:
            t.say(f"  {group}: " + json.dumps(items[group]["versions"][0], sort_keys=True)[:300])
    t.check(
        f"{METRICS_GROUP} is in /apis (merged from the extension server)", METRICS_GROUP in items
    )
    if with_crd:
        t.check(f"{CR_GROUP} is in /apis (from the CRD)", CR_GROUP in items)


async def request_aggregated(ctx: DemoContext) -> JSON | None:
    async with ctx.session.get(ctx.base + "/apis", headers={"Accept": AGGREGATED}) as r:
        return dict(await r.json(content_type=None)) if r.status == 200 else None


async def crd_vs_aggregation(ctx: DemoContext) -> None:
    t = ctx.t
    ns = seed.namespace_name(0)
    t.title(f"how much CPU and memory do the pods of {ns} use? a CRD vs API aggregation")
    metrics = await _aggregated_half(ctx, ns)
    with_crd = metrics is not None and await _crd_half(ctx, ns, metrics)
    await _discovery(ctx, with_crd)
    if with_crd:
        await ctx.send("DELETE", f"{CRDS}/{CRD_NAME}", None)  # its objects go with it
    t.explain(
        "A custom resource is data this server owns: every change is an etcd write and a watch "
        "event, reads come from the watch cache, and it outlives any controller. An aggregated "
        "API is a service this server fronts: nothing is stored here, each request costs one "
        "more TLS hop to the extension server, which owns storage, validation and watch; when "
        "it is down its APIService turns Available=False and requests get 503."
    )
