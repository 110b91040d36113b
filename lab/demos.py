"""The lab's experiments, run live against a running lab (``watchcache lab demo NAME``).

Each demo sends real requests, prints a transcript (request, status, the
``X-Watchcache-*`` headers and counts), checks every claim it makes, and ends with a
one-line explanation. A demo fails (non-zero exit) when what it observed is not what it
claims. Demos that need a second server (``consistent-read``, ``too-old``) start it on
the lab's etcd themselves and stop it by PID before returning.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from lab import (
    demos_admission,
    demos_aggregation,
    demos_apf_audit,
    demos_auth,
    demos_crds,
    demos_ssa,
    demos_storm,
    seed,
)
from lab.apiserver import APIServer
from lab.control import etcd_start, etcd_stop
from lab.demo_context import DemoContext, warm
from lab.observe import Observation, Transcript, WatchStream, event_line, request, watch
from lab.state import LabState

__all__ = ["DEMOS", "DemoContext", "run_demo"]

# A consistent read from the cache needs etcd's progress-notification fixes
# (etcd #15220, #17507): 3.4.31+ or 3.5.13+.
CONSISTENT_READ_ETCD = {3: {4: 31, 5: 13}}
ETCD_DOWN_BOUND = 30.0
# kube-apiserver's metric names (k8s.io/apiserver/pkg/endpoints/metrics,
# pkg/storage/cacher/metrics, pkg/storage/etcd3/metrics), as the demos cite them.
STORAGE_FETCHED = "apiserver_storage_list_fetched_objects_total"
STORAGE_RETURNED = "apiserver_storage_list_returned_objects_total"
CACHE_FETCHED = "apiserver_cache_list_fetched_objects_total"
CACHE_RETURNED = "apiserver_cache_list_returned_objects_total"
CONSISTENT_READS = "apiserver_watch_cache_consistent_read_total"
PODS = {"resource": "pods"}  # seconds within which an unset-RV read must fail with etcd down


def _etcd_supports_consistent_read(version: str) -> bool:
    try:
        major, minor, patch = (int(x) for x in version.split("-")[0].split(".")[:3])
    except ValueError:
        return False
    if (major, minor) > (3, 5):
        return True
    need = CONSISTENT_READ_ETCD.get(major, {}).get(minor)
    return need is not None and patch >= need


def _log(state: LabState, demo: str) -> Path:
    """Where a demo's own server logs: next to the lab's files."""
    return Path(state.kubeconfig).parent / f"{demo}-server.log"


async def _touch_pod(ctx: DemoContext, ns: str, name: str, note: str) -> Observation:
    """A metadata-only change (a label), like a controller would make; returns the PUT."""
    got = await ctx.get(f"/api/v1/namespaces/{ns}/pods/{name}", show=False)
    obj = got.body
    obj["metadata"].setdefault("labels", {})["lab.watchcache.io/touched"] = note
    return await ctx.send("PUT", f"/api/v1/namespaces/{ns}/pods/{name}", obj)


# -- rv0-ignores-limit ------------------------------------------------------------------


async def rv0_ignores_limit(ctx: DemoContext) -> None:
    t = ctx.t
    t.title("limit=10 with and without resourceVersion=0")
    etcd, before = await ctx.metered("/api/v1/pods?limit=10")
    t.check("unset RV is served from etcd", etcd.served_from == "etcd", str(etcd.served_from))
    t.check("etcd honours limit: 10 items and a continue token",
            etcd.status == 200 and len(etcd.items) == 10 and bool(etcd.continue_token))
    await ctx.cite(before, [(STORAGE_RETURNED, PODS, 10)])
    total = 10 + int(etcd.metadata.get("remainingItemCount", 0))
    cache, before = await ctx.metered("/api/v1/pods?limit=10&resourceVersion=0")
    t.check("RV=0 is served from the watch cache", cache.served_from == "cache",
            str(cache.served_from))
    # RV=0 is "any version": the cache may be a write or two behind etcd's count while
    # the simulated cluster churns, so the claim is every pod it holds, not etcd's total
    held = len(cache.items)
    t.check(f"the cache ignores limit: all {held} pods it holds, no continue token",
            cache.status == 200 and held > 10 and abs(held - total) <= 10
            and not cache.continue_token,
            f"{held} items")
    await ctx.cite(before, [(CACHE_RETURNED, PODS, held)])
    t.explain("resourceVersion=0 means 'any version is fine', so the watch cache answers with "
              "everything it holds and drops limit; a paginated client must leave RV unset.")


# -- field-selector-full-scan ----------------------------------------------------------


async def field_selector_full_scan(ctx: DemoContext) -> None:
    t = ctx.t
    node = seed.node_name(0)
    t.title(f"fieldSelector=spec.nodeName={node}: etcd vs cache, indexed vs not")
    every = await ctx.get("/api/v1/pods?resourceVersion=0", show=False)
    total = len(every.items)
    sel = f"fieldSelector=spec.nodeName%3D{node}"
    etcd, before = await ctx.metered(f"/api/v1/pods?{sel}")
    k = len(etcd.items)
    t.check("etcd reads every pod to return the node's pods (full scan)",
            etcd.served_from == "etcd" and etcd.fetched == total and etcd.returned == k > 0,
            f"fetched {etcd.fetched} of {total}, returned {etcd.returned}")
    await ctx.cite(before, [(STORAGE_FETCHED, PODS, total), (STORAGE_RETURNED, PODS, k)])
    cache, before = await ctx.metered(f"/api/v1/pods?{sel}&resourceVersion=0")
    t.check("the cache's spec.nodeName index touches only that node's pods",
            cache.served_from == "cache" and cache.fetched == k and cache.returned == k,
            f"fetched {cache.fetched}, returned {cache.returned}")
    await ctx.cite(before, [(CACHE_FETCHED, {**PODS, "index": "spec.nodeName"}, k),
                            (CACHE_RETURNED, PODS, k)])  # fmt: skip
    target = etcd.items[0] if etcd.items else {}
    ip = (target.get("status") or {}).get("podIP")
    field_sel = f"status.podIP%3D{ip}" if ip else f"metadata.name%3D{target['metadata']['name']}"
    scan, before = await ctx.metered(f"/api/v1/pods?fieldSelector={field_sel}&resourceVersion=0")
    t.check("a field without an index scans the whole cache",
            scan.served_from == "cache" and scan.fetched == total and scan.returned == 1,
            f"fetched {scan.fetched}, returned {scan.returned}")
    await ctx.cite(before, [(CACHE_FETCHED, {**PODS, "index": ""}, total),
                            (CACHE_RETURNED, PODS, 1)])  # fmt: skip
    t.explain(f"etcd knows nothing of fields: {total} pods fetched for {k} returned. The watch "
              "cache indexes pods by spec.nodeName (what every kubelet lists), so it reads "
              "only the matches; any other field is a scan of memory, still no etcd.")


# -- etcd-down --------------------------------------------------------------------------


async def etcd_down(ctx: DemoContext) -> None:
    t = ctx.t
    st = ctx.state
    t.title("etcd stopped: the cache keeps serving RV=0, quorum reads fail")
    if not st.own_etcd or not st.control_socket:
        t.say("  skipped: this lab runs against an external etcd (--etcd-servers); "
              "it cannot stop it.")
        return
    pids = st.etcd_pids
    left = await etcd_stop(st.control_socket)
    t.say(f"  stopped etcd (pids {pids}), still running: {left}")
    try:
        cached = await ctx.get("/api/v1/pods?resourceVersion=0&limit=1")
        t.check("RV=0 is still served, from the cache",
                cached.status == 200 and cached.served_from == "cache" and len(cached.items) > 0)
        quorum = await ctx.get("/api/v1/pods?limit=1", within=ETCD_DOWN_BOUND + 15)
        t.check(f"unset RV fails within {ETCD_DOWN_BOUND:.0f} s",
                quorum.status >= 500 and quorum.seconds <= ETCD_DOWN_BOUND,
                f"{quorum.status} after {quorum.seconds:.1f} s")
    finally:
        new = await etcd_start(st.control_socket)
        t.say(f"  restarted etcd: pids {new}")
    deadline = time.monotonic() + 30
    back: Observation | None = None
    while time.monotonic() < deadline:
        back = await ctx.get("/api/v1/pods?limit=1", show=False, within=10)
        if back.status == 200:
            break
        await asyncio.sleep(0.2)
    if back is not None:
        t.obs(back)
    t.check("after the restart, unset RV is served by etcd again",
            back is not None and back.status == 200)
    t.explain("RV=0 reads need only the cache, which keeps its last state while etcd is "
              "gone; an unset RV is a quorum read and cannot be answered without etcd.")


# -- watch ------------------------------------------------------------------------------


def _named(event: dict[str, Any], name: str) -> bool:
    return bool((event.get("object") or {}).get("metadata", {}).get("name") == name)


async def _read_until(stream: WatchStream, want: Callable[[dict[str, Any]], bool], t: Transcript,
                      within: float, show: int = 1000) -> list[dict[str, Any]]:  # fmt: skip
    """Events until ``want(event)``, the stream's end or ``within`` seconds; the first
    ``show`` are printed, the rest summarized."""
    events: list[dict[str, Any]] = []
    try:
        return await _read_events(stream, want, t, within, show, events)
    finally:
        if len(events) > show:
            t.say(f"  ... {len(events) - show} more events")


async def _read_events(stream: WatchStream, want: Callable[[dict[str, Any]], bool],
                       t: Transcript, within: float, show: int,
                       events: list[dict[str, Any]]) -> list[dict[str, Any]]:  # fmt: skip
    deadline = time.monotonic() + within
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return events
        try:
            ev = await stream.next(left)
        except TimeoutError:
            return events
        if ev is None:
            return events
        events.append(ev)
        if len(events) <= show:
            t.say(event_line(ev))
        if want(ev):
            return events


async def watch_demo(ctx: DemoContext) -> None:
    t = ctx.t
    ns, node = seed.namespace_name(0), seed.node_name(0)
    path = f"/api/v1/namespaces/{ns}/pods?fieldSelector=spec.nodeName%3D{node}"
    t.title(f"watch the pods of {node} in {ns}: replay, then a live change")
    listed = await ctx.get(path + "&resourceVersion=0")
    names = {p["metadata"]["name"] for p in listed.items}
    t.check("there are pods to watch", len(names) > 0, f"{len(names)} pods")
    if not names:
        return
    t.say(f"  GET {path}&watch=1")
    async with watch(ctx.session, ctx.base, path + "&watch=1") as stream:
        t.check("the watch opens with 200", stream.status == 200, str(stream.status))
        seen: set[str] = set()

        def replayed(ev: dict[str, Any]) -> bool:
            seen.add(ev["object"]["metadata"]["name"])
            return seen >= names

        events = await _read_until(stream, replayed, t, 10, show=3)
        t.check("first an ADDED for every current pod",
                all(e["type"] == "ADDED" for e in events) and seen == names,
                f"{len(events)} events")
        target = sorted(names)[0]
        put = await _touch_pod(ctx, ns, target, f"watch-{int(time.time())}")
        rv = str(put.metadata.get("resourceVersion") or (put.body or {}).get("metadata", {})
                 .get("resourceVersion"))
        more = await _read_until(stream, lambda e: e["type"] == "MODIFIED" and _named(e, target),
                                 t, 10)  # fmt: skip
        mod = [e for e in more if e["type"] == "MODIFIED" and _named(e, target)]
        t.check("then the live MODIFIED, with the write's resourceVersion",
                len(mod) == 1 and mod[0]["object"]["metadata"]["resourceVersion"] == rv,
                f"rv {rv}")  # fmt: skip
        if len(more) > len(mod):
            t.say(f"  ({len(more) - len(mod)} other change(s): the simulated cluster at work)")
    t.explain("a watch without RV first replays the current state as ADDED events (from the "
              "cache), then streams changes as they happen: a list and a watch in one.")


# -- bookmark ---------------------------------------------------------------------------


async def bookmark(ctx: DemoContext) -> None:
    t = ctx.t
    node = seed.node_name(0)
    t.title("allowWatchBookmarks: progress without events")
    start = await ctx.get("/api/v1/pods?limit=1")
    rv = start.resource_version
    others = await ctx.get(f"/api/v1/pods?resourceVersion=0&fieldSelector=spec.nodeName!%3D{node}"
                           "&limit=1", show=False)  # fmt: skip
    sel_node = node if others.items else "lab-no-such-node"
    other = others.items[0] if others.items else (await ctx.get(
        "/api/v1/pods?resourceVersion=0", show=False)).items[0]
    path = (f"/api/v1/pods?watch=1&resourceVersion={rv}&allowWatchBookmarks=true"
            f"&fieldSelector=spec.nodeName%3D{sel_node}&timeoutSeconds=5")  # fmt: skip
    t.say(f"  GET {path}")
    t0 = time.monotonic()
    async with watch(ctx.session, ctx.base, path) as stream:
        t.check("the watch opens with 200", stream.status == 200, str(stream.status))
        meta = other["metadata"]
        put = await _touch_pod(ctx, meta["namespace"], meta["name"], f"bookmark-{int(t0)}")
        write_rv = int((put.body or {}).get("metadata", {}).get("resourceVersion", 0))
        t.say(f"  changed {meta['name']} (not on {sel_node}) at rv {write_rv}")
        events = await _read_until(stream, lambda e: False, t, 15)
    ended = time.monotonic() - t0
    marks = [e for e in events if e["type"] == "BOOKMARK"]
    t.check("no event for the change: it does not match the selector",
            not any(_named(e, meta["name"]) for e in events if e["type"] != "BOOKMARK"))
    bm_rv = int(marks[-1]["object"]["metadata"]["resourceVersion"]) if marks else 0
    t.check("a BOOKMARK carries a resourceVersion at or past the change",
            bool(marks) and bm_rv >= write_rv and marks[-1]["object"].get("kind") == "Pod",
            f"bookmark rv {bm_rv} >= {write_rv}")
    t.check("the stream ends cleanly at timeoutSeconds", ended < 12, f"{ended:.1f} s")
    t.explain("a bookmark tells a watcher 'you have seen everything up to RV', so after a "
              "reconnect it resumes from there instead of an old RV that may be compacted.")


# -- too-old ----------------------------------------------------------------------------


async def too_old(ctx: DemoContext) -> None:
    from etcdclient import EtcdClient
    from etcdclient.errors import Compacted

    t = ctx.t
    st = ctx.state
    t.title("watch from a compacted resourceVersion: 410 Gone")
    small = APIServer(st.etcd_endpoints, st.prefix, extra_args=("--default-watch-cache-size=20",
                                                                "--endpoint-reconciler-type=none"),
                      log_path=_log(st, "too-old"))  # fmt: skip
    await asyncio.to_thread(small.start)
    try:
        await warm(ctx, small.url, "/api/v1/configmaps")
        t.say(f"  started a second server with --default-watch-cache-size=20 at {small.url}")
        start = await ctx.get("/api/v1/configmaps?limit=1")
        old_rv = start.resource_version or 0
        ns = seed.namespace_name(0)
        name = "lab-too-old"
        cm = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": name, "namespace": ns}, "data": {"n": "0"}}  # fmt: skip
        await request(ctx.session, ctx.base, f"/api/v1/namespaces/{ns}/configmaps",
                      method="POST", body=cm)  # fmt: skip
        last: Observation | None = None
        for n in range(40):
            last = await request(ctx.session, ctx.base,
                                 f"/api/v1/namespaces/{ns}/configmaps/{name}", method="PATCH",
                                 body={"data": {"n": str(n)}})  # fmt: skip
        now = int((last.body or {}).get("metadata", {}).get("resourceVersion", 0)) if last else 0
        t.say(f"  remembered rv {old_rv}, then wrote 40 changes to configmap {ns}/{name} "
              f"(now rv {now})")
        async with EtcdClient(st.etcd_endpoints) as etcd:
            await etcd.compact(now)
            t.say(f"  compacted etcd at revision {now}")
            try:
                await etcd.list_prefix(f"{st.prefix}/configmaps/".encode(), revision=old_rv)
                t.check("etcd refuses a read at the old revision", False)
            except Compacted as e:
                t.check("etcd refuses a read at the old revision", True,
                        f"compacted ({e.compact_revision})")
        path = f"/api/v1/configmaps?watch=1&resourceVersion={old_rv}"
        t.say(f"  GET {path}   (on the second server)")
        async with watch(ctx.session, small.url, path) as stream:
            t.check("the watch still opens with 200", stream.status == 200)
            ev = await stream.next(10)
            if ev is not None:
                t.say(event_line(ev))
            obj = (ev or {}).get("object") or {}
            msg = str(obj.get("message", ""))
            t.check("one ERROR event: 410 Expired, too old resource version",
                    ev is not None and ev["type"] == "ERROR" and obj.get("code") == 410
                    and obj.get("reason") == "Expired"
                    and msg.startswith(f"too old resource version: {old_rv} ("), repr(msg))
            t.check("then the stream ends", await stream.next(10) is None)
    finally:
        await asyncio.to_thread(small.stop)
        await request(ctx.session, ctx.base,
                      f"/api/v1/namespaces/{seed.namespace_name(0)}/configmaps/lab-too-old",
                      method="DELETE")  # fmt: skip
    t.explain("the watch cache keeps a bounded history of events; a watch from before it "
              "gets 410 Expired and must re-list, as etcd itself no longer has that revision.")


# -- raw-etcd ---------------------------------------------------------------------------


async def raw_etcd(ctx: DemoContext) -> None:
    from etcdclient import EtcdClient

    t = ctx.t
    st = ctx.state
    t.title(f"what is stored in etcd under {st.prefix}/")
    async with EtcdClient(st.etcd_endpoints) as etcd:
        rng = await etcd.list_prefix(f"{st.prefix}/".encode(), keys_only=True)
        counts: dict[str, int] = {}
        for kv in rng.kvs:
            rel = kv.key.decode()[len(st.prefix) + 1:]
            counts[rel.split("/")[0]] = counts.get(rel.split("/")[0], 0) + 1
        t.say(f"  {len(rng.kvs)} keys at revision {rng.revision}: "
              + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))
        t.check("nodes are stored under their historic name 'minions'",
                counts.get("minions", 0) > 0 and "nodes" not in counts)
        api = await ctx.get("/api/v1/pods?limit=1")
        pod = api.items[0]
        meta = pod["metadata"]
        key = f"{st.prefix}/pods/{meta['namespace']}/{meta['name']}"
        got = await etcd.get(key.encode())
    t.check(f"the pod's key is {st.prefix}/pods/<namespace>/<name>", got.kv is not None, key)
    if got.kv is None:
        return
    stored = _show_value(t, key, got.kv.value)
    t.say(f"  mod_revision={got.kv.mod_revision} create_revision={got.kv.create_revision} "
          f"version={got.kv.version}")
    t.check("the stored value carries no resourceVersion",
            "resourceVersion" not in stored.get("metadata", {}))
    t.check("the API's resourceVersion is the key's mod_revision",
            meta["resourceVersion"] == str(got.kv.mod_revision),
            f"{meta['resourceVersion']} == {got.kv.mod_revision}")
    t.explain("objects are values under /registry/<resource>/<namespace>/<name>, encoded as "
              "kube-apiserver encodes them (protobuf by default; serve with "
              "--storage-media-type=application/json to store readable JSON); resourceVersion "
              "is not stored: it is etcd's mod_revision, set on read.")


def _show_value(t: Transcript, key: str, value: bytes) -> dict[str, Any]:
    """Print a stored value part by part (protobuf) or as text (JSON); its object."""
    from storage import codec
    from storage.protobuf.serializer import MAGIC, unwrap

    obj = codec.decode_object(key, value)
    if not value.startswith(MAGIC):
        t.say(f"  value ({len(value)} bytes, JSON): {value[:160].decode(errors='replace')}...")
        return obj
    envelope = unwrap(value)
    t.say(f"  value ({len(value)} bytes, protobuf): {value[:40]!r}...")
    t.say("    k8s\\x00          the 4-byte magic of Kubernetes' protobuf encoding, then")
    t.say(f"    runtime.Unknown  typeMeta: apiVersion={envelope.api_version!r} "
          f"kind={envelope.kind!r}")
    t.say(f"                     raw: the {envelope.kind} message, {len(envelope.raw)} bytes "
          "(metadata = field 1, spec = 2, status = 3)")
    t.say("                     contentEncoding, contentType: empty (raw is plain protobuf)")
    t.say(f"    decoded: {orjson.dumps(obj)[:160].decode(errors='replace')}...")
    return obj


# -- consistent-read --------------------------------------------------------------------


async def consistent_read(ctx: DemoContext) -> None:
    from etcdclient import EtcdClient

    t = ctx.t
    st = ctx.state
    t.title("ConsistentListFromCache: unset RV from the cache, still consistent")
    async with EtcdClient(st.etcd_endpoints) as etcd:
        version = (await etcd.status()).version
    fixed = _etcd_supports_consistent_read(version)
    gated = APIServer(st.etcd_endpoints, st.prefix,
                      extra_args=("--feature-gates=ConsistentListFromCache=true",
                                  "--endpoint-reconciler-type=none"),
                      log_path=_log(st, "consistent-read"))  # fmt: skip
    await asyncio.to_thread(gated.start)
    try:
        await warm(ctx, gated.url, "/api/v1/configmaps")
        t.say(f"  etcd {version}; second server with the gate on at {gated.url}")
        ns = seed.namespace_name(0)
        name = f"lab-consistent-{int(time.time() * 1000)}"
        cm = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": name, "namespace": ns}, "data": {"k": "v"}}  # fmt: skip
        await ctx.send("POST", f"/api/v1/namespaces/{ns}/configmaps", cm)
        # Then a write elsewhere (a pod), as a live cluster always has: etcd's revision
        # is now ahead of the configmaps cache, which must prove it is fresh.
        every = await ctx.get("/api/v1/pods?resourceVersion=0&limit=1", show=False)
        meta = every.items[0]["metadata"]
        put = await _touch_pod(ctx, meta["namespace"], meta["name"], f"consistent-{name}")
        wrote = int((put.body or {}).get("metadata", {}).get("resourceVersion", 0))
        off = await ctx.get(f"/api/v1/namespaces/{ns}/configmaps")
        t.check("gate off: unset RV is served from etcd", off.served_from == "etcd")
        on, before = await ctx.metered(f"/api/v1/namespaces/{ns}/configmaps", base=gated.url)
        names = {i["metadata"]["name"] for i in on.items}
        t.check("gate on: the list includes the write just made (read-your-writes)",
                on.status == 200 and name in names and (on.resource_version or 0) >= wrote,
                f"list rv {on.resource_version} >= {wrote}")
        if fixed:
            t.check(f"gate on, etcd {version}: served from the cache", on.served_from == "cache")
        else:
            t.check(f"gate on, etcd {version} (no progress-notify fixes): falls back to etcd",
                    on.served_from == "etcd", str(on.served_from))
        await ctx.cite(before, [(CONSISTENT_READS, {"resource": "configmaps",
                                                    "fallback": str(not fixed).lower()}, 1)],
                       base=gated.url)  # fmt: skip
        await request(ctx.session, ctx.base, f"/api/v1/namespaces/{ns}/configmaps/{name}",
                      method="DELETE")  # fmt: skip
    finally:
        await asyncio.to_thread(gated.stop)
    t.explain("with the gate on, an unset-RV LIST asks etcd only for its current revision, "
              "waits until the cache has caught up (a progress notification proves it when "
              "the resource itself did not change) and answers from memory; that needs "
              "etcd >= 3.5.13, otherwise it goes to etcd as before.")
    if not fixed:
        t.say(f"   Not from the cache here: etcd {version} lacks the progress-notify fixes\n"
              "   (etcd #15220, #17507), so the cache cannot prove it is fresh. On 3.5.13+:\n"
              "     make etcd-versions      # Debian's etcd 3.5.16 into .cache/etcd/\n"
              "     ETCD_BIN=.cache/etcd/3.5.16/usr/bin/etcd .venv/bin/watchcache lab")


DemoFn = Callable[[DemoContext], Awaitable[None]]

# In the order `demo all` runs them: the destructive ones (compaction, etcd stopped) last.
DEMOS: dict[str, tuple[DemoFn, str]] = {
    "rv0-ignores-limit": (rv0_ignores_limit, "RV=0 is served from the cache, limit ignored"),
    "field-selector-full-scan": (field_selector_full_scan,
                                 "objects fetched vs returned: etcd, cache, index"),
    "watch": (watch_demo, "ADDED replay, then a live MODIFIED"),
    "bookmark": (bookmark, "BOOKMARK events carry progress without changes"),
    "raw-etcd": (raw_etcd, "the keys and stored bytes, straight from etcd"),
    "consistent-read": (consistent_read, "ConsistentListFromCache on vs off"),
    "too-old": (too_old, "compaction, then 410 too old resource version"),
    "authn": (demos_auth.authn, "who am I: anonymous, token, cert, service account"),
    "rbac": (demos_auth.rbac, "the learner denied, then granted by a RoleBinding"),
    "ssa": (demos_ssa.ssa, "SSA: two managers, a conflict, --force-conflicts"),
    "crd": (demos_crds.crd, "a CRD: its own watch cache, deleted with its CRs"),
    "crd-vs-aggregation": (demos_aggregation.crd_vs_aggregation, "a CR vs an aggregated API"),
    "admission-webhook": (demos_admission.admission_webhook, "webhook: mutated, denied"),
    "validating-policy": (demos_admission.validating_policy, "a CEL rule refuses 10 replicas"),
    "pod-security": (demos_admission.pod_security, "a privileged Pod warned, then rejected"),
    "apf": (demos_apf_audit.apf, "one flow floods: 429s for it alone, queueing shown"),
    "audit": (demos_apf_audit.audit, "the audit trail of one request, stage by stage"),
    "relist-storm": (demos_storm.relist_storm, "every kubelet relists at once: etcd vs cache"),
    "etcd-down": (etcd_down, "etcd stopped: RV=0 still served, quorum reads fail"),
}


async def run_demo(name: str, state: LabState, transcript: Transcript) -> bool:
    """Run one demo; True when every claim held. Unexpected errors count as failures."""
    fn = DEMOS[name][0]
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:
        try:
            await fn(DemoContext(state, session, transcript))
        except Exception as e:  # a demo that crashes has not shown what it claims
            transcript.check(f"ran without error: {type(e).__name__}: {e}", False)
    return transcript.ok
