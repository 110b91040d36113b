"""The official ``kubernetes`` Python client against the server: create, read, list with
selectors and pages, patch (json and merge), delete — and its ApiException on errors."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.client_python import list_meta, meta, names
from tests.integration.conftest import ServerProcess

pytestmark = pytest.mark.etcd


@pytest.fixture(scope="module")
def core(e2e_server: ServerProcess) -> Iterator[client.CoreV1Api]:
    config = client.Configuration(host=e2e_server.url)
    with client.ApiClient(config) as api:
        yield client.CoreV1Api(api)


@pytest.fixture(scope="module")
def apps(e2e_server: ServerProcess) -> Iterator[client.AppsV1Api]:
    config = client.Configuration(host=e2e_server.url)
    with client.ApiClient(config) as api:
        yield client.AppsV1Api(api)


def _pod(name: str, labels: dict[str, str]) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")]),
    )


def test_crud_with_the_official_client(core: client.CoreV1Api) -> None:
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="py")))
    for i in range(5):
        core.create_namespaced_pod("py", _pod(f"p{i}", {"tier": "db" if i % 2 else "web"}))
    pod = core.read_namespaced_pod("p1", "py")
    assert meta(pod).uid and meta(pod).labels == {"tier": "db"}

    selected = core.list_namespaced_pod("py", label_selector="tier=db")
    assert names(selected) == ["p1", "p3"]
    by_field = core.list_pod_for_all_namespaces(field_selector="metadata.name=p4")
    assert names(by_field) == ["p4"]

    first = core.list_namespaced_pod("py", limit=2)
    assert names(first) == ["p0", "p1"]
    assert list_meta(first).remaining_item_count == 3
    second = core.list_namespaced_pod("py", limit=2, _continue=list_meta(first)._continue)
    assert names(second) == ["p2", "p3"]
    assert list_meta(second).resource_version == list_meta(first).resource_version

    merged = core.patch_namespaced_pod(
        "p0",
        "py",
        {"metadata": {"labels": {"patched": "merge"}}},
        _content_type="application/merge-patch+json",
    )
    assert meta(merged).labels == {"tier": "web", "patched": "merge"}
    jsonpatched = core.patch_namespaced_pod(
        "p0",
        "py",
        [{"op": "replace", "path": "/metadata/labels/tier", "value": "cache"}],
        _content_type="application/json-patch+json",
    )
    assert (meta(jsonpatched).labels or {})["tier"] == "cache"

    core.delete_namespaced_pod("p0", "py")
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod("p0", "py")
    assert err.value.status == 404
    body = err.value.body or ""
    assert 'pods \\"p0\\" not found' in body or 'pods "p0" not found' in body


def test_conflict_surfaces_as_409(core: client.CoreV1Api) -> None:
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="py-conflict")))
    cm = core.create_namespaced_config_map(
        "py-conflict", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c"), data={"a": "1"})
    )
    cm.data = {"a": "2"}
    core.replace_namespaced_config_map("c", "py-conflict", cm)
    cm.data = {"a": "3"}  # stale resourceVersion
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_config_map("c", "py-conflict", cm)
    assert err.value.status == 409


def test_apps_group(apps: client.AppsV1Api, core: client.CoreV1Api) -> None:
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="py-apps")))
    deploy = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="web"),
        spec=client.V1DeploymentSpec(
            selector=client.V1LabelSelector(match_labels={"app": "web"}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": "web"}),
                spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")]),
            ),
        ),
    )
    created = apps.create_namespaced_deployment("py-apps", deploy)
    assert meta(created).generation == 1
    scaled = apps.patch_namespaced_deployment(
        "web", "py-apps", {"spec": {"replicas": 3}}, _content_type="application/merge-patch+json"
    )
    assert scaled.spec is not None and scaled.spec.replicas == 3
    assert meta(scaled).generation == 2
    assert names(apps.list_deployment_for_all_namespaces()) == ["web"]
