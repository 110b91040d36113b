"""The generic store's per-verb error interpretation (upstream's
``storeerr.Interpret<Verb>Error``, ``k8s.io/apiserver/pkg/storage/errors/storage.go``)."""

from __future__ import annotations

import pytest

from proxy.kube.resources import build_registry
from proxy.registry.resources import ResourceInfo
from proxy.registry.store import Verb, interpret_storage_error
from storage import errors as serr


def _deployments() -> ResourceInfo:
    resource = build_registry().lookup("apps", "deployments")
    assert resource is not None
    return resource


@pytest.mark.parametrize("verb", ["get", "update", "delete"])
def test_not_found_names_the_object(verb: Verb) -> None:
    e = interpret_storage_error(serr.NotFound("/k"), verb, _deployments(), "d")
    assert (e.code, e.message) == (404, 'deployments.apps "d" not found')


def test_a_list_not_found_has_no_name() -> None:
    e = interpret_storage_error(serr.NotFound("/k"), "list", _deployments(), "d")
    assert (e.code, e.message) == (404, 'deployments.apps "" not found')


def test_exists_is_already_exists_on_create_and_a_conflict_on_update() -> None:
    e = interpret_storage_error(serr.AlreadyExists("/k"), "create", _deployments(), "d")
    assert (e.code, e.reason) == (409, "AlreadyExists")
    e = interpret_storage_error(serr.AlreadyExists("/k"), "update", _deployments(), "d")
    assert (e.code, e.reason) == (409, "Conflict")
    assert e.message.startswith('Operation cannot be fulfilled on deployments.apps "d": ')


@pytest.mark.parametrize("verb", ["get", "list", "watch", "create", "update", "delete"])
def test_etcd_unreachable_is_the_timeout_status_for_every_verb(verb: Verb) -> None:
    err = serr.Unavailable("etcd request did not complete within 10s", timeout=True)
    e = interpret_storage_error(err, verb, _deployments(), "d")
    assert (e.code, e.reason, e.headers) == (504, "Timeout", {})
    assert e.message == "Timeout: request did not complete within the allotted timeout"
