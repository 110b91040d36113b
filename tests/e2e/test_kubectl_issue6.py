"""The real kubectl 1.37 and the official Python client's DynamicClient against a server
on a real etcd (issue 6): discovery (aggregated, with ETag/304), OpenAPI v3, server-side
Table printing (also for ``get -w``), apply (client-side, strategic merge patch), strict
field validation, run/label/annotate/patch/edit/delete/wait/explain, the protobuf
bodies of ``kubectl create namespace``, and server-side dry run.

One server per module (``e2e_server``: once uncached, once with the watch cache); each
test works in a namespace of its own.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client, dynamic

from tests.e2e.conftest import KUBECTL, write_kubeconfig
from tests.integration.conftest import JSON, ServerProcess

pytestmark = pytest.mark.etcd

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"


@pytest.fixture(scope="module")
def kc(e2e_server: ServerProcess, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_kubeconfig(tmp_path_factory.mktemp("kc") / "kubeconfig", e2e_server.url)


def run(
    kc: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KUBECTL), f"--kubeconfig={kc}", *args],
        input=stdin, capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip


def ok(kc: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> str:
    proc = run(kc, *args, stdin=stdin, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def failing(kc: Path, *args: str, stdin: str | None = None) -> str:
    proc = run(kc, *args, stdin=stdin)
    assert proc.returncode != 0, proc.stdout
    return proc.stderr


def namespace(kc: Path, name: str) -> str:
    manifest = f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {name}}}\n"
    ok(kc, "apply", "-f", "-", stdin=manifest)
    return name


def pod_manifest(name: str, ns: str, *, image: str = "nginx:1.25", sidecar: bool = True) -> str:
    text = (
        f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {ns}\n"
        f"  labels: {{app: {name}, tier: web}}\n"
        "spec:\n  containers:\n"
        f"  - name: main\n    image: {image}\n    ports:\n    - containerPort: 80\n"
        "    env:\n    - {name: A, value: '1'}\n    - {name: B, value: '2'}\n"
    )
    if sidecar:
        text += "  - name: sidecar\n    image: busybox\n    command: [sleep, '3600']\n"
    return text


def deployment_manifest(name: str, ns: str, *, replicas: int) -> str:
    return (
        f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: {ns}}}\n"
        f"spec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: {name}}}}}\n"
        f"  template:\n    metadata: {{labels: {{app: {name}}}}}\n"
        "    spec: {containers: [{name: c, image: nginx}]}\n"
    )


def header(table: str) -> list[str]:
    return table.splitlines()[0].split()


def names(table: str, column: int = 0) -> list[str]:
    return [line.split()[column] for line in table.splitlines()[1:]]


def get_json(kc: Path, *args: str) -> JSON:
    out: JSON = json.loads(ok(kc, "get", *args, "-o", "json"))
    return out


def http_get(url: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


# --- discovery and OpenAPI ---------------------------------------------------------


def test_api_resources_and_versions(kc: Path) -> None:
    resources = ok(kc, "api-resources")
    assert header(resources) == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    rows = {line.split()[0]: line.split() for line in resources.splitlines()[1:]}
    assert rows["pods"] == ["pods", "po", "v1", "true", "Pod"]
    assert rows["deployments"] == ["deployments", "deploy", "apps/v1", "true", "Deployment"]
    assert rows["namespaces"] == ["namespaces", "ns", "v1", "false", "Namespace"]
    namespaced = ok(kc, "api-resources", "--namespaced=false", "-o", "name").split()
    assert "nodes" in namespaced and "pods" not in namespaced
    versions = ok(kc, "api-versions").split()
    assert {"v1", "apps/v1", "batch/v1"} <= set(versions)
    # every built-in resource with plain storage, at its preferred version
    assert rows["podtemplates"] == ["podtemplates", "v1", "true", "PodTemplate"]
    assert rows["horizontalpodautoscalers"] == [
        "horizontalpodautoscalers",
        "hpa",
        "autoscaling/v2",
        "true",
        "HorizontalPodAutoscaler",
    ]
    assert rows["storageclasses"] == [
        "storageclasses",
        "sc",
        "storage.k8s.io/v1",
        "false",
        "StorageClass",
    ]
    assert rows["flowschemas"][1:] == ["flowcontrol.apiserver.k8s.io/v1", "false", "FlowSchema"]
    assert {"policy/v1", "networking.k8s.io/v1", "node.k8s.io/v1"} <= set(versions)
    # served over another version's storage (autoscaling/v2, the core Events)
    assert {"autoscaling/v1", "events.k8s.io/v1"} <= set(versions)
    # /api/v1's virtual resources, as kube-apiserver lists them; the reviews only
    # with the secure port
    assert rows["bindings"] == ["bindings", "v1", "true", "Binding"]
    assert rows["componentstatuses"] == ["componentstatuses", "cs", "v1", "false",
                                         "ComponentStatus"]  # fmt: skip
    assert "tokenreviews" not in rows
    # API aggregation's APIServices (proxy/aggregator), as kube-apiserver lists them
    apiservices = ["apiservices", "apiregistration.k8s.io/v1", "false", "APIService"]
    assert rows["apiservices"] == apiservices


def test_podtemplates_generic_table(kc: Path) -> None:
    ns = namespace(kc, "podtemplates-table")
    manifest = {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "pt", "namespace": ns},
        "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
    }
    ok(kc, "apply", "-f", "-", stdin=json.dumps(manifest))
    table = ok(kc, "get", "podtemplates", "-n", ns)
    assert header(table) == ["NAME", "AGE"]  # the generic NAME/AGE table
    assert table.splitlines()[1].split()[0] == "pt"


@pytest.mark.parametrize("path", ["/api", "/apis"])
def test_aggregated_discovery_etag_and_304(e2e_server: ServerProcess, path: str) -> None:
    code, headers, body = http_get(e2e_server.url + path, {"Accept": AGGREGATED})
    assert code == 200
    assert headers["Content-Type"].startswith("application/json;g=apidiscovery.k8s.io;v=v2")
    doc = json.loads(body)
    assert doc["kind"] == "APIGroupDiscoveryList" and doc["items"]
    etag = headers["ETag"]
    code, headers, body = http_get(
        e2e_server.url + path, {"Accept": AGGREGATED, "If-None-Match": etag}
    )
    assert (code, body, headers["ETag"]) == (304, b"", etag)
    code, _, _ = http_get(e2e_server.url + path, {"Accept": AGGREGATED, "If-None-Match": '"x"'})
    assert code == 200
    legacy = json.loads(http_get(e2e_server.url + path, {"Accept": "application/json"})[2])
    assert legacy["kind"] == ("APIVersions" if path == "/api" else "APIGroupList")


def test_get_raw_discovery_and_openapi(kc: Path) -> None:
    assert json.loads(ok(kc, "get", "--raw", "/api"))["versions"] == ["v1"]
    groups = json.loads(ok(kc, "get", "--raw", "/apis"))["groups"]
    assert "apps" in [g["name"] for g in groups]
    index = json.loads(ok(kc, "get", "--raw", "/openapi/v3"))["paths"]
    assert {"api/v1", "apis/apps/v1"} <= set(index)
    url = index["api/v1"]["serverRelativeURL"]
    assert "?hash=" in url
    doc = json.loads(ok(kc, "get", "--raw", url))
    assert doc["openapi"].startswith("3.")
    assert "/api/v1/namespaces/{namespace}/pods" in doc["paths"]
    pod = doc["components"]["schemas"]["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]


def test_explain(kc: Path) -> None:
    out = ok(kc, "explain", "pods.spec.containers")
    assert "KIND:       Pod" in out
    assert "FIELD: containers <[]Container>" in out
    assert "image\t<string>" in out
    deploy = ok(kc, "explain", "deployments.spec.replicas")
    assert "GROUP:      apps" in deploy and "FIELD: replicas <integer>" in deploy


# --- get: Table printing -------------------------------------------------------------


def test_get_tables_and_formats(kc: Path) -> None:
    ns = namespace(kc, "e6-get")
    ok(kc, "apply", "-f", "-", stdin=pod_manifest("web", ns))
    node_pod = pod_manifest("db", ns, sidecar=False).replace("tier: web", "tier: db")
    node_pod = node_pod.replace("spec:\n", "spec:\n  nodeName: node-7\n")
    ok(kc, "apply", "-f", "-", stdin=node_pod)

    table = ok(kc, "get", "pods", "-n", ns)
    assert header(table) == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    rows = [line.split()[:4] for line in table.splitlines()[1:]]
    assert rows == [["db", "0/1", "Pending", "0"], ["web", "0/2", "Pending", "0"]]

    wide = ok(kc, "get", "pods", "-n", ns, "-o", "wide")
    assert header(wide)[:7] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"]
    db = wide.splitlines()[1].split()
    assert db[0] == "db" and db[5:7] == ["<none>", "node-7"]

    as_json = get_json(kc, "pods", "-n", ns)
    assert as_json["kind"] == "List" or as_json["kind"] == "PodList"
    items = as_json["items"]
    assert isinstance(items, list) and [i["metadata"]["name"] for i in items] == ["db", "web"]
    as_yaml = yaml.safe_load(ok(kc, "get", "pod", "web", "-n", ns, "-o", "yaml"))
    assert as_yaml["spec"]["containers"][0]["image"] == "nginx:1.25"
    assert as_yaml["metadata"]["resourceVersion"]

    assert names(ok(kc, "get", "pods", "-n", ns, "-l", "tier=db")) == ["db"]
    assert names(ok(kc, "get", "pods", "-n", ns, "-l", "tier in (db,web),app!=db")) == ["web"]
    selected = ok(kc, "get", "pods", "-n", ns, "--field-selector", "spec.nodeName=node-7")
    assert names(selected) == ["db"]
    everywhere = ok(kc, "get", "pods", "-A", "--field-selector", "metadata.namespace=" + ns)
    assert header(everywhere)[:2] == ["NAMESPACE", "NAME"]
    assert [line.split()[:2] for line in everywhere.splitlines()[1:]] == [[ns, "db"], [ns, "web"]]
    assert ns in names(ok(kc, "get", "namespaces"))
    assert header(ok(kc, "get", "ns", ns)) == ["NAME", "STATUS", "AGE"]


def test_get_other_kinds_tables(kc: Path) -> None:
    ns = namespace(kc, "e6-kinds")
    ok(kc, "apply", "-f", "-", stdin=deployment_manifest("d", ns, replicas=2))
    ok(kc, "apply", "-f", "-", stdin=(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm, namespace: {ns}}}\n"
        "data: {a: '1', b: '2'}\n"
    ))  # fmt: skip
    deploys = ok(kc, "get", "deployments", "-n", ns, "-o", "wide")
    assert header(deploys)[:5] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert deploys.splitlines()[1].split()[0:2] == ["d", "0/2"]
    cms = ok(kc, "get", "cm", "-n", ns)
    assert header(cms) == ["NAME", "DATA", "AGE"] and cms.splitlines()[1].split()[:2] == ["cm", "2"]


def test_scale_deployment(kc: Path) -> None:
    ns = namespace(kc, "e6-scale")
    ok(kc, "apply", "-f", "-", stdin=deployment_manifest("s", ns, replicas=1))
    assert ok(kc, "scale", "deployment", "s", "-n", ns, "--replicas=3").strip() == (
        "deployment.apps/s scaled"
    )
    dry = ok(kc, "scale", "deployment/s", "-n", ns, "--replicas=9", "--dry-run=server")
    assert "(server dry run)" in dry
    stored = get_json(kc, "deployment", "s", "-n", ns)
    assert stored["spec"]["replicas"] == 3 and stored["metadata"]["generation"] == 2
    err = failing(kc, "scale", "deployment", "s", "-n", ns, "--current-replicas=1", "--replicas=2")
    assert "Expected replicas to be 1, was 3" in err
    scale = json.loads(ok(kc, "get", "--raw", f"/apis/apps/v1/namespaces/{ns}/deployments/s/scale"))
    assert (scale["kind"], scale["spec"], scale["status"]) == (
        "Scale",
        {"replicas": 3},
        {"replicas": 0, "selector": "app=s"},
    )


def test_describe_pod(kc: Path) -> None:
    ns = namespace(kc, "e6-describe")
    ok(kc, "apply", "-f", "-", stdin=pod_manifest("web", ns))
    out = ok(kc, "describe", "pod", "web", "-n", ns)
    # (the column width follows the longest label: admission adds "Service Account:")
    assert re.search(r"^Name: +web$", out, re.M) and re.search(rf"^Namespace: +{ns}$", out, re.M)
    assert re.search(r"^Status: +Pending$", out, re.M)
    assert re.search(r"^Service Account: +default$", out, re.M)
    assert "  main:" in out and "Image:" in out and "nginx:1.25" in out
    assert "app=web" in out


# --- apply, validation ---------------------------------------------------------------


def test_apply_create_modify_remove(kc: Path) -> None:
    ns = namespace(kc, "e6-apply")
    manifest = pod_manifest("app", ns)
    assert ok(kc, "apply", "-f", "-", stdin=manifest).strip() == "pod/app created"
    assert ok(kc, "apply", "-f", "-", stdin=manifest).strip() == "pod/app unchanged"

    changed = manifest.replace("nginx:1.25", "nginx:1.27")
    assert ok(kc, "apply", "-f", "-", stdin=changed).strip() == "pod/app configured"
    pod = get_json(kc, "pod", "app", "-n", ns)
    spec = pod["spec"]
    assert isinstance(spec, dict)
    assert [c["image"] for c in spec["containers"]] == ["nginx:1.27", "busybox"]

    # kube refuses to add or remove a Pod's containers; a Deployment's template may lose
    # them: the second run drops the sidecar, the env var B and the tier label, the
    # strategic merge patch computed from last-applied deletes them (by merge key)
    assert ok(kc, "apply", "-f", "-", stdin=_as_deployment(manifest)).strip() == (
        "deployment.apps/app created"
    )
    removed = pod_manifest("app", ns, image="nginx:1.27", sidecar=False)
    removed = removed.replace("    - {name: B, value: '2'}\n", "").replace(", tier: web", "")
    assert ok(kc, "apply", "-f", "-", stdin=_as_deployment(removed)).strip() == (
        "deployment.apps/app configured"
    )
    deploy = get_json(kc, "deployment", "app", "-n", ns)
    spec, meta = deploy["spec"], deploy["metadata"]
    assert isinstance(spec, dict) and isinstance(meta, dict)
    containers = spec["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["main"]
    assert containers[0]["env"] == [{"name": "A", "value": "1"}]
    assert containers[0]["ports"] in ([{"containerPort": 80, "protocol": "TCP"}],
                                      [{"containerPort": 80}])  # fmt: skip
    assert meta["labels"] == {"app": "app"}
    applied = json.loads(meta["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])
    assert applied["metadata"]["labels"] == {"app": "app"}


def _as_deployment(pod_yaml: str) -> str:
    """A Deployment (JSON) whose template holds the Pod manifest's spec."""
    pod = yaml.safe_load(pod_yaml)
    meta = pod["metadata"]
    selector = {"app": meta["name"]}
    return json.dumps({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": selector}, "spec": pod["spec"]},
        },
    })  # fmt: skip


def test_apply_unknown_field_strict_and_warn(kc: Path) -> None:
    ns = namespace(kc, "e6-strict")
    bad = pod_manifest("bad", ns).replace("spec:\n", "spec:\n  foo: bar\n")
    err = failing(kc, "apply", "-f", "-", stdin=bad)
    assert 'strict decoding error: unknown field "spec.foo"' in err
    assert names(ok(kc, "get", "pods", "-n", ns)) == []  # nothing created
    # the second apply (a patch) is rejected the same way
    ok(kc, "apply", "-f", "-", stdin=pod_manifest("bad", ns))
    err = failing(kc, "apply", "-f", "-", stdin=bad)
    assert err.startswith("The request is invalid: patch: Invalid value: ")
    assert err.rstrip().endswith('strict decoding error: unknown field "spec.foo"')
    warned = run(kc, "apply", "--validate=warn", "-f", "-", stdin=bad.replace("bad", "warned"))
    assert warned.returncode == 0, warned.stderr
    assert 'Warning: unknown field "spec.foo"' in warned.stderr
    assert "foo" not in get_json(kc, "pod", "warned", "-n", ns)["spec"]


def test_schema_violation_names_the_field(kc: Path) -> None:
    ns = namespace(kc, "e6-invalid")
    bad = pod_manifest("typo", ns).replace("containerPort: 80", "containerPort: eighty")
    err = failing(kc, "apply", "--validate=false", "-f", "-", stdin=bad)
    assert "spec.containers[0].ports[0].containerPort" in err
    assert "is invalid" in err


def test_protobuf_bodies_are_decoded(kc: Path) -> None:
    # `kubectl create namespace|configmap|...` encode their object as protobuf
    ok(kc, "create", "namespace", "e6-proto")
    assert get_json(kc, "namespace", "e6-proto")["metadata"]["name"] == "e6-proto"


# --- imperative verbs ----------------------------------------------------------------


def test_run_label_annotate_patch(kc: Path) -> None:
    # `run` without -n uses the kubeconfig's "default" namespace, which the server
    # bootstraps as kube-apiserver does
    assert ok(kc, "run", "e6-run", "--image=busybox", "--labels=k=v").strip() == (
        "pod/e6-run created"
    )
    ns = namespace(kc, "e6-verbs")
    ok(kc, "run", "r", "-n", ns, "--image=busybox", "--", "sleep", "60")
    pod = get_json(kc, "pod", "r", "-n", ns)
    assert pod["spec"]["containers"][0]["args"] == ["sleep", "60"]

    assert ok(kc, "label", "pod", "r", "-n", ns, "team=a").strip() == "pod/r labeled"
    ok(kc, "label", "pod", "r", "-n", ns, "team=b", "--overwrite")
    assert ok(kc, "annotate", "pod", "r", "-n", ns, "note=hi").strip() == "pod/r annotated"
    meta = get_json(kc, "pod", "r", "-n", ns)["metadata"]
    assert meta["labels"]["team"] == "b" and meta["annotations"]["note"] == "hi"
    ok(kc, "label", "pod", "r", "-n", ns, "team-")
    assert "team" not in get_json(kc, "pod", "r", "-n", ns)["metadata"]["labels"]

    ok(kc, "patch", "pod", "r", "-n", ns, "--type=json",
       "-p", '[{"op":"add","path":"/metadata/labels/j","value":"1"}]')  # fmt: skip
    ok(kc, "patch", "pod", "r", "-n", ns, "--type=merge", "-p", '{"metadata":{"labels":{"m":"1"}}}')
    out = ok(kc, "patch", "pod", "r", "-n", ns,
             "-p", '{"spec":{"containers":[{"name":"r","image":"busybox:1.36"}]}}')  # fmt: skip
    assert out.strip() == "pod/r patched"
    pod = get_json(kc, "pod", "r", "-n", ns)
    assert pod["metadata"]["labels"]["j"] == "1" and pod["metadata"]["labels"]["m"] == "1"
    containers = pod["spec"]["containers"]
    assert [(c["name"], c["image"], c["args"]) for c in containers] == [
        ("r", "busybox:1.36", ["sleep", "60"])
    ]
    err = failing(kc, "patch", "pod", "r", "-n", ns, "--type=json",
                  "-p", '[{"op":"test","path":"/metadata/name","value":"x"}]')  # fmt: skip
    # kube-apiserver's words for a failing JSON patch operation (a 422 with the generic
    # message, checked against a real kube-apiserver): kubectl shows no more
    assert "the server rejected our request due to an error in our request" in err


def sed_editor(tmp_path: Path, expression: str) -> dict[str, str]:
    """An environment whose KUBE_EDITOR runs ``sed -i <expression>`` on the file."""
    editor = tmp_path / "editor.sh"
    editor.write_text(f'#!/bin/sh\nsed -i "{expression}" "$1"\n')
    editor.chmod(0o755)
    return {**os.environ, "EDITOR": str(editor), "KUBE_EDITOR": str(editor)}


def test_edit_with_a_scripted_editor(kc: Path, tmp_path: Path) -> None:
    ns = namespace(kc, "e6-edit")
    ok(kc, "apply", "-f", "-", stdin=pod_manifest("ed", ns))
    env = sed_editor(tmp_path, "s/image: busybox/image: busybox:edited/")
    assert ok(kc, "edit", "pod", "ed", "-n", ns, env=env).strip() == "pod/ed edited"
    containers = get_json(kc, "pod", "ed", "-n", ns)["spec"]["containers"]
    assert [c["image"] for c in containers] == ["nginx:1.25", "busybox:edited"]


def test_delete_by_name_and_by_label(kc: Path) -> None:
    ns = namespace(kc, "e6-delete")
    for name, group in (("a", "x"), ("b", "x"), ("c", "y")):
        ok(kc, "run", name, "-n", ns, "--image=busybox", f"--labels=grp={group}")
    out = ok(kc, "delete", "pod", "c", "-n", ns)
    assert out.strip() == f'pod "c" deleted from {ns} namespace'
    out = ok(kc, "delete", "pods", "-n", ns, "-l", "grp=x")
    assert sorted(out.splitlines()) == [
        f'pod "a" deleted from {ns} namespace',
        f'pod "b" deleted from {ns} namespace',
    ]
    assert "No resources found" in run(kc, "get", "pods", "-n", ns).stderr
    err = failing(kc, "delete", "pod", "c", "-n", ns)
    assert 'pods "c" not found' in err


def test_server_dry_run_on_every_write(kc: Path) -> None:
    ns = namespace(kc, "e6-dry")
    ok(kc, "apply", "-f", "-", stdin=pod_manifest("keep", ns))
    before = get_json(kc, "pod", "keep", "-n", ns)
    dry = ("--dry-run=server",)
    assert "(server dry run)" in ok(kc, "apply", *dry, "-f", "-", stdin=pod_manifest("new", ns))
    assert "(server dry run)" in ok(kc, "label", *dry, "pod", "keep", "-n", ns, "x=1")
    assert "(server dry run)" in ok(kc, "annotate", *dry, "pod", "keep", "-n", ns, "x=1")
    ok(kc, "patch", *dry, "pod", "keep", "-n", ns, "-p", '{"metadata":{"labels":{"p":"1"}}}')
    # (replace the object as stored: admission added fields a pod update may not remove,
    # as kube-apiserver's does)
    replaced = json.loads(json.dumps(before))
    replaced["spec"]["containers"][0]["image"] = "nginx:9"
    ok(kc, "replace", *dry, "-f", "-", stdin=json.dumps(replaced))
    assert "(server dry run)" in ok(kc, "delete", *dry, "pod", "keep", "-n", ns)
    assert "(server dry run)" in ok(kc, "delete", *dry, "pods", "-n", ns, "--all")
    assert names(ok(kc, "get", "pods", "-n", ns)) == ["keep"]
    assert get_json(kc, "pod", "keep", "-n", ns) == before


# --- watch and wait ------------------------------------------------------------------


async def _line(stream: asyncio.StreamReader) -> str:
    async with asyncio.timeout(20):
        return (await stream.readline()).decode()


async def kubectl_watch(kc: Path, *args: str) -> asyncio.subprocess.Process:
    """``kubectl get <args>`` running, its output piped (terminate it when done)."""
    return await asyncio.create_subprocess_exec(
        str(KUBECTL), f"--kubeconfig={kc}", "get", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


async def test_get_watch_prints_table_events(kc: Path) -> None:
    ns = namespace(kc, "e6-watch")
    ok(kc, "run", "w1", "-n", ns, "--image=busybox")
    proc = await kubectl_watch(kc, "pods", "-n", ns, "-w", "--output-watch-events")
    assert proc.stdout is not None
    try:
        head = await _line(proc.stdout)
        assert head.split() == ["EVENT", "NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        assert (await _line(proc.stdout)).split()[:4] == ["ADDED", "w1", "0/1", "Pending"]
        await asyncio.to_thread(ok, kc, "label", "pod", "w1", "-n", ns, "seen=yes")
        assert (await _line(proc.stdout)).split()[:4] == ["MODIFIED", "w1", "0/1", "Pending"]
        await asyncio.to_thread(ok, kc, "delete", "pod", "w1", "-n", ns, "--wait=false")
        # as kube-apiserver: the pod is written Terminating, then removed
        assert (await _line(proc.stdout)).split()[:4] == ["MODIFIED", "w1", "0/1", "Terminating"]
        assert (await _line(proc.stdout)).split()[:2] == ["DELETED", "w1"]
    finally:
        proc.terminate()
        await proc.wait()


async def test_plain_get_watch_prints_columns(kc: Path) -> None:
    ns = namespace(kc, "e6-watch2")
    proc = await kubectl_watch(kc, "pods", "-n", ns, "-w", "-o", "wide")
    assert proc.stdout is not None
    try:
        await asyncio.to_thread(ok, kc, "run", "w2", "-n", ns, "--image=busybox")
        head = await _line(proc.stdout)
        assert head.split()[:7] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"]
        assert (await _line(proc.stdout)).split()[:3] == ["w2", "0/1", "Pending"]
    finally:
        proc.terminate()
        await proc.wait()


async def test_wait_for_delete(kc: Path) -> None:
    ns = namespace(kc, "e6-wait")
    ok(kc, "run", "gone", "-n", ns, "--image=busybox")
    waiter = await asyncio.create_subprocess_exec(
        str(KUBECTL), f"--kubeconfig={kc}", "wait", "--for=delete", "pod/gone", "-n", ns,
        "--timeout=30s",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    await asyncio.to_thread(ok, kc, "delete", "pod", "gone", "-n", ns, "--wait=false")
    async with asyncio.timeout(30):
        out, err = await waiter.communicate()
    assert waiter.returncode == 0, err
    assert b"condition met" in out or out == b""


# --- the official Python client's DynamicClient ----------------------------------------


@pytest.fixture(scope="module")
def dyn(e2e_server: ServerProcess) -> Iterator[dynamic.DynamicClient]:
    with client.ApiClient(client.Configuration(host=e2e_server.url)) as api:
        # kubernetes.dynamic has no annotations
        yield dynamic.DynamicClient(api)  # type: ignore[no-untyped-call]


def test_dynamic_client_lists_and_patches(kc: Path, dyn: dynamic.DynamicClient) -> None:
    ns = namespace(kc, "e6-dynamic")
    ok(kc, "apply", "-f", "-", stdin=pod_manifest("dp", ns))
    pods = dyn.resources.get(api_version="v1", kind="Pod")
    assert [p.metadata.name for p in pods.get(namespace=ns).items] == ["dp"]
    patched = pods.patch(
        name="dp", namespace=ns, body={"metadata": {"labels": {"dyn": "1"}}},
        content_type="application/merge-patch+json",
    )  # fmt: skip
    assert patched.metadata.labels["dyn"] == "1"
    smp = pods.patch(  # the DynamicClient's default patch type is strategic
        name="dp", namespace=ns,
        body={"spec": {"containers": [{"name": "sidecar", "image": "busybox:2"}]}},
    )  # fmt: skip
    assert [c.image for c in smp.spec.containers] == ["nginx:1.25", "busybox:2"]

    deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    body = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "dd"},
        "spec": {
            "replicas": 1, "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}},
                         "spec": {"containers": [{"name": "c", "image": "x:1"}]}},
        },
    }  # fmt: skip
    deployments.create(body=body, namespace=ns)
    scaled = deployments.patch(
        name="dd", namespace=ns, body={"spec": {"replicas": 3}},
        content_type="application/merge-patch+json",
    )  # fmt: skip
    assert scaled.spec.replicas == 3
    jp = deployments.patch(
        name="dd", namespace=ns, content_type="application/json-patch+json",
        body=[{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "x:2"}],
    )  # fmt: skip
    assert jp.spec.template.spec.containers[0].image == "x:2"
    listed = deployments.get(namespace=ns, label_selector="")
    assert [(d.metadata.name, d.spec.replicas) for d in listed.items] == [("dd", 3)]
    everywhere = deployments.get()
    assert "dd" in [d.metadata.name for d in everywhere.items]
    table_type = "application/json;as=Table;v=v1;g=meta.k8s.io"
    as_table = pods.get(namespace=ns, header_params={"Accept": table_type})
    assert [c["name"] for c in as_table.columnDefinitions][:3] == ["Name", "Ready", "Status"]


def test_namespace_deletion_and_secrets(kc: Path) -> None:
    err = failing(kc, "delete", "namespace", "default")
    assert 'namespaces "default" is forbidden: this namespace may not be deleted' in err
    ns = namespace(kc, "e6-gone")
    ok(kc, "run", "p", "-n", ns, "--image=busybox")
    secret = f"apiVersion: v1\nkind: Secret\nmetadata: {{name: s, namespace: {ns}}}\n"
    ok(kc, "apply", "-f", "-", stdin=secret + "stringData: {user: admin}\n")
    stored = get_json(kc, "secret", "s", "-n", ns)
    assert (stored["type"], stored["data"]) == ("Opaque", {"user": "YWRtaW4="})
    assert "stringData" not in stored
    assert "(server dry run)" in ok(kc, "delete", "namespace", ns, "--dry-run=server")
    assert names(ok(kc, "get", "pods", "-n", ns)) == ["p"]
    assert ok(kc, "delete", "namespace", ns).strip() == f'namespace "{ns}" deleted'
    assert "No resources found" in run(kc, "get", "pods,secrets", "-n", ns).stderr
    assert f'namespaces "{ns}" not found' in failing(kc, "get", "namespace", ns)
