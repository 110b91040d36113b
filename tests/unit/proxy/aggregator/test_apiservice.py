"""APIService validation, defaults and the local APIService list, as a table of cases
ported from kube-aggregator (``pkg/apis/apiregistration/validation/validation_test.go``
and ``test/e2e/apimachinery/aggregator.go``); each states upstream's answer, as a
v1.32 kube-apiserver gave it (``POST .../apiservices?dryRun=All``: the messages below
are its words, byte for byte)."""

from __future__ import annotations

from typing import Any

import pytest

from proxy import apierrors
from proxy.aggregator.apiservice import (
    LOCAL_PRIORITIES,
    available_condition,
    local_apiservice,
    parse,
    set_condition,
)
from proxy.aggregator.autoregister import local_apiservices
from proxy.aggregator.validation import STRATEGY, apiservice_resource
from proxy.registry.validation import validate_create

JSON = dict[str, Any]
_DNS1123 = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_DNS1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def _apiservice(name: str, **spec: Any) -> JSON:
    """An APIService; priorities 100/10 unless given."""
    spec = {"groupPriorityMinimum": 100, "versionPriority": 10, **spec}
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": name}, "spec": spec}  # fmt: skip


# (case, object, upstream's 422 message or None when accepted)
CASES: list[tuple[str, JSON, str | None]] = [
    (
        "name must be version.group",
        _apiservice("v1", version="v1", groupPriorityMinimum=100, versionPriority=10),
        'APIService.apiregistration.k8s.io "v1" is invalid: metadata.name: Invalid value: "v1": '
        'must be `spec.version+"."+spec.group`: "v1."',
    ),
    (
        "only v1 may have an empty group",
        _apiservice("v2.", version="v2", groupPriorityMinimum=100, versionPriority=10),
        'APIService.apiregistration.k8s.io "v2." is invalid: spec.group: Required value: only '
        "v1 may have an empty group and it better be legacy kube",
    ),
    (
        "group a DNS subdomain, version a DNS-1035 label, priority in range",
        _apiservice(
            "V1.Bad_Group",
            group="Bad_Group",
            version="V1",
            groupPriorityMinimum=20001,
            versionPriority=1,
        ),
        'APIService.apiregistration.k8s.io "V1.Bad_Group" is invalid: [spec.group: Invalid '
        f'value: "Bad_Group": {_DNS1123}, spec.version: Invalid value: "V1": {_DNS1035}, '
        "spec.groupPriorityMinimum: Invalid value: 20001: must be positive and less than 20000]",
    ),
    (
        "a local APIService has neither caBundle nor insecureSkipTLSVerify",
        _apiservice(
            "v1.local.example.com",
            group="local.example.com",
            version="v1",
            caBundle="aGVsbG8=",
            insecureSkipTLSVerify=True,
        ),
        'APIService.apiregistration.k8s.io "v1.local.example.com" is invalid: [spec.caBundle: '
        'Invalid value: "5 bytes": local APIServices may not have a caBundle, '
        "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have "
        "insecureSkipTLSVerify]",
    ),
    (
        "every service-reference rule at once",
        _apiservice(
            "v1.bad",
            group="wrong.example.com",
            version="v1",
            groupPriorityMinimum=0,
            versionPriority=2000,
            caBundle="aGVsbG8=",
            insecureSkipTLSVerify=True,
            service={"namespace": "", "name": "", "port": 70000},
        ),
        'APIService.apiregistration.k8s.io "v1.bad" is invalid: [metadata.name: Invalid value: '
        '"v1.bad": must be `spec.version+"."+spec.group`: "v1.wrong.example.com", '
        "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000, "
        "spec.versionPriority: Invalid value: 2000: must be positive and less than 1000, "
        "spec.service.namespace: Required value, spec.service.name: Required value, "
        "spec.service.port: Invalid value: 70000: port is not valid: must be between 1 and "
        "65535, inclusive, spec.insecureSkipTLSVerify: Invalid value: true: may not be true if "
        "caBundle is present]",
    ),
    (
        "port 0 is not a port",
        _apiservice(
            "v1.ok.example.com",
            group="ok.example.com",
            version="v1",
            service={"namespace": "ns", "name": "svc", "port": 0},
        ),
        'APIService.apiregistration.k8s.io "v1.ok.example.com" is invalid: spec.service.port: '
        "Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
    ),
    (
        "a remote APIService (port defaulted to 443)",
        _apiservice(
            "v1.ok.example.com",
            group="ok.example.com",
            version="v1",
            service={"namespace": "ns", "name": "svc"},
        ),
        None,
    ),
    (
        "the core group's local APIService",
        _apiservice("v1.", version="v1", groupPriorityMinimum=18000, versionPriority=1),
        None,
    ),
]


@pytest.mark.parametrize(("case", "obj", "message"), CASES, ids=[c[0] for c in CASES])
def test_validation_as_upstream(case: str, obj: JSON, message: str | None) -> None:
    resource = apiservice_resource()
    if message is None:
        validate_create(obj, resource, STRATEGY)
        if "service" in obj["spec"]:
            assert obj["spec"]["service"]["port"] == 443  # SetDefaults_ServiceReference
        return
    with pytest.raises(apierrors.StatusError) as info:
        validate_create(obj, resource, STRATEGY)
    assert info.value.code == 422
    assert info.value.message == message


# The local APIServices of a v1.32 kube-apiserver (kubectl get apiservices -o json):
# name -> (groupPriorityMinimum, versionPriority), each labelled automanaged=onstart,
# Available=True, reason Local. apiregistration.k8s.io itself has none.
UPSTREAM_LOCAL = {
    "v1.": (18000, 1), "v1.admissionregistration.k8s.io": (16700, 15),
    "v1.apiextensions.k8s.io": (16700, 15), "v1.apps": (17800, 15),
    "v1.authentication.k8s.io": (17700, 15), "v1.authorization.k8s.io": (17600, 15),
    "v1.autoscaling": (17500, 15), "v2.autoscaling": (17500, 30), "v1.batch": (17400, 15),
    "v1.certificates.k8s.io": (17300, 15), "v1.coordination.k8s.io": (16500, 15),
    "v1.discovery.k8s.io": (16200, 15), "v1.events.k8s.io": (17750, 15),
    "v1.flowcontrol.apiserver.k8s.io": (16100, 21), "v1.networking.k8s.io": (17200, 15),
    "v1.node.k8s.io": (16300, 15), "v1.policy": (17100, 15),
    "v1.rbac.authorization.k8s.io": (17000, 15), "v1.scheduling.k8s.io": (16600, 15),
    "v1.storage.k8s.io": (16800, 15),
}  # fmt: skip


def test_local_priorities_are_upstreams() -> None:
    for name, priority in UPSTREAM_LOCAL.items():
        version, _, group = name.partition(".")
        assert LOCAL_PRIORITIES[(group, version)] == priority, name
        obj = local_apiservice(group, version)
        assert obj is not None
        assert obj["metadata"] == {
            "name": name,
            "labels": {"kube-aggregator.kubernetes.io/automanaged": "onstart"},
        }
        assert ("group" in obj["spec"]) == bool(group)  # v1. has no group field


def test_custom_group_versions_get_upstreams_crd_apiservice() -> None:
    """A kube-apiserver 1.32 registers a CRD's versions as automanaged "true",
    groupPriorityMinimum 1000, versionPriority 100, Available=True reason Local."""
    served = [("", "v1"), ("apps", "v1"), ("widgets.example.com", "v1beta1")]
    objs = {o["metadata"]["name"]: o for o in local_apiservices(served)}
    assert list(objs) == ["v1.", "v1.apps", "v1beta1.widgets.example.com"]
    crd = objs["v1beta1.widgets.example.com"]
    assert crd["metadata"]["labels"] == {"kube-aggregator.kubernetes.io/automanaged": "true"}
    assert crd["spec"] == {"group": "widgets.example.com", "version": "v1beta1",
                           "groupPriorityMinimum": 1000, "versionPriority": 100}  # fmt: skip


def test_condition_keeps_transition_time_while_status_holds() -> None:
    obj: JSON = {"metadata": {"name": "v1.x"}}
    assert set_condition(obj, available_condition("False", "ServiceNotFound", "a", "T1"))
    assert not set_condition(obj, available_condition("False", "ServiceNotFound", "a", "T2"))
    assert set_condition(obj, available_condition("False", "FailedDiscoveryCheck", "b", "T3"))
    cond = obj["status"]["conditions"][0]
    assert (cond["lastTransitionTime"], cond["reason"]) == ("T1", "FailedDiscoveryCheck")
    assert set_condition(obj, available_condition("True", "Passed", "all checks passed", "T4"))
    assert obj["status"]["conditions"][0]["lastTransitionTime"] == "T4"
    assert parse(obj).available
