"""The views kept by informer handlers: the admission configuration source (a sorted
snapshot, stale after any change, empty for a resource not served) and the APIService
lister (parsed refs follow adds, updates, deletes and a relist's tombstones)."""

from __future__ import annotations

from proxy.admission.configuration import ADMISSION_GROUP, ConfigurationSource
from proxy.aggregator.lister import APIServiceLister
from proxy.informer import SharedInformerFactory
from tests.unit.proxy.informer.fakes import FakeListerWatcher, deliver, fake_factory, obj


def test_configurations_are_sorted_by_name_and_follow_every_change() -> None:
    factory = fake_factory()
    source = ConfigurationSource(factory)
    informer = factory.informer_for(ADMISSION_GROUP, "validatingwebhookconfigurations")
    informer.replace([obj("b", 1), obj("a", 2)], "2")
    assert [o["metadata"]["name"] for o in source.items("validatingwebhookconfigurations")] == [
        "a",
        "b",
    ]
    version = source.version
    deliver(informer, "ADDED", obj("0", 3))
    deliver(informer, "DELETED", obj("b", 4))
    assert source.version == version + 2
    assert [o["metadata"]["name"] for o in source.items("validatingwebhookconfigurations")] == [
        "0",
        "a",
    ]
    assert source.get("validatingwebhookconfigurations", "a") == obj("a", 2)


def test_a_configuration_resource_not_served_has_no_informer_and_no_objects() -> None:
    served = {"mutatingwebhookconfigurations"}
    factory = SharedInformerFactory(
        lambda group, plural: FakeListerWatcher() if plural in served else None
    )
    source = ConfigurationSource(factory)
    assert set(factory.informers()) == {(ADMISSION_GROUP, "mutatingwebhookconfigurations")}
    assert source.items("validatingadmissionpolicies") == []
    assert source.get("validatingadmissionpolicies", "x") is None


def _apiservice(version: str, group: str, rv: int, service: str = "") -> dict[str, object]:
    spec: dict[str, object] = {"group": group, "version": version}
    if service:
        spec["service"] = {"namespace": "ns", "name": service, "port": 443}
    return {**obj(f"{version}.{group}", rv), "spec": spec}


def test_the_apiservice_refs_follow_events_and_a_relists_tombstones() -> None:
    factory = fake_factory()
    lister = APIServiceLister(factory)
    changed: list[str] = []
    lister.on_change(changed.append)
    informer = lister.informer
    informer.replace([_apiservice("v1", "a.io", 1), _apiservice("v1", "b.io", 2)], "2")
    assert lister.by_group_version("a.io", "v1") is not None
    deliver(informer, "MODIFIED", _apiservice("v1", "a.io", 3, service="backend"))
    ref = lister.by_group_version("a.io", "v1")
    assert ref is not None and not ref.local and ref.service_name == "backend"
    informer.replace([_apiservice("v1", "a.io", 3, service="backend")], "5")  # b.io missed
    assert lister.by_group_version("b.io", "v1") is None
    assert sorted(lister.objects) == ["v1.a.io"]
    assert changed == ["v1.a.io", "v1.b.io", "v1.a.io", "v1.b.io", "v1.a.io"]
