"""kube's groups in the request decoder's scheme: the versions kube-apiserver still
decodes but no longer serves, and events.k8s.io Events decoded as core Events."""

from __future__ import annotations

import pytest

from proxy.apierrors import StatusError
from proxy.endpoints.scheme import check_kind
from proxy.kube.resources import build_registry
from proxy.kube.scheme import register_kube_scheme


def _message(obj: dict[str, str], group: str, version: str, plural: str) -> str:
    resource = build_registry().get(group, version, plural)
    assert resource is not None
    with pytest.raises(StatusError) as caught:
        check_kind(dict(obj), resource)
    return str(caught.value.body["message"])


def test_an_unserved_version_of_the_kind_is_a_version_mismatch() -> None:
    register_kube_scheme()
    body = {"apiVersion": "apps/v1beta1", "kind": "Deployment"}
    assert _message(body, "apps", "v1", "deployments") == (
        "the API version in the data (apps/v1beta1) does not match the expected API "
        "version (apps/v1)"
    )
    event = {"apiVersion": "events.k8s.io/v1", "kind": "Event"}
    assert _message(event, "", "v1", "events") == (
        "the API version in the data (events.k8s.io/v1) does not match the expected API "
        "version (v1)"
    )


def test_a_version_no_scheme_knows_is_not_registered() -> None:
    register_kube_scheme()
    body = {"apiVersion": "apps/v9", "kind": "Deployment"}
    assert _message(body, "apps", "v1", "deployments") == (
        'Deployment in version "v9" cannot be handled as a Deployment: no kind "Deployment" '
        'is registered for version "apps/v9" in scheme "pkg/api/legacyscheme/scheme.go:30"'
    )
