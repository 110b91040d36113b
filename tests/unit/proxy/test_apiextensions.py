"""The pure parts of ``proxy.apiextensions``: names and conditions (upstream's
naming_controller_test cases), version order, JSONPath, printer rows, the CRD defaults
and the conversion of objects seen through another version."""

from __future__ import annotations

import datetime as dt
from typing import Any

from proxy.apiextensions import crd_strategy
from proxy.apiextensions.controllers import calculate_names
from proxy.apiextensions.custom_resource import (
    jsonpath_get,
    served_versions,
    table_printer,
    version_priority,
)
from proxy.registry.conversion import NoneConverter, _already_in

JSON = dict[str, Any]


def _crd(
    plural: str, kind: str, *, accepted: JSON | None = None, short: list[str] | None = None
) -> JSON:
    names: JSON = {
        "plural": plural,
        "singular": plural[:-1],
        "kind": kind,
        "listKind": kind + "List",
    }
    if short:
        names["shortNames"] = short
    status: JSON = {"acceptedNames": accepted} if accepted is not None else {}
    return {
        "metadata": {"name": f"{plural}.g.io"},
        "spec": {"group": "g.io", "names": names},
        "status": status,
    }


def test_fresh_names_are_accepted_and_installing() -> None:
    """Upstream's naming controller: Established False/Installing once the names are
    accepted; the establishing controller sets it True after the CRD is served."""
    crd = _crd("widgets", "Widget", short=["wd"])
    names, accepted, established = calculate_names(crd, [crd])
    assert names == crd["spec"]["names"]
    assert accepted["status"] == "True" and accepted["reason"] == "NoConflicts"
    assert established == {
        "type": "Established", "status": "False",
        "reason": "Installing", "message": "the initial names have been accepted",
    }  # fmt: skip


def test_a_taken_plural_is_a_conflict_and_not_established() -> None:
    other = _crd(
        "widgets", "Other", accepted={"plural": "widgets", "singular": "other", "kind": "Other"}
    )
    crd = _crd("widgets", "Widget")
    names, accepted, established = calculate_names(crd, [other, crd])
    assert (accepted["reason"], accepted["message"]) == (
        "PluralConflict",
        '"widgets" is already in use',
    )
    assert "plural" not in names
    assert (established["status"], established["reason"]) == ("False", "NotAccepted")


def test_short_names_are_all_or_nothing() -> None:
    """Upstream: one taken short name keeps every requested short name out."""
    other = _crd(
        "gizmos", "Gizmo", accepted={"plural": "gizmos", "kind": "Gizmo", "shortNames": ["gz"]}
    )
    crd = _crd("widgets", "Widget", short=["wd", "gz"])
    names, accepted, _ = calculate_names(crd, [other, crd])
    assert (accepted["reason"], accepted["message"]) == (
        "ShortNamesConflict",
        '"gz" is already in use',
    )
    assert "shortNames" not in names and names["plural"] == "widgets"


def test_kube_aware_version_order() -> None:
    versions = ["v1alpha1", "v2", "foo", "v1beta2", "v1", "v1beta1", "v10"]
    assert sorted(versions, key=version_priority) == [
        "v10", "v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo",
    ]  # fmt: skip


def test_jsonpath() -> None:
    obj = {"spec": {"a": [{"b": 1}], "m": {"x.y": "z"}}}
    assert jsonpath_get(obj, ".spec.a[0].b") == (1, True)
    assert jsonpath_get(obj, "{.spec.m['x.y']}") == ("z", True)
    assert jsonpath_get(obj, ".spec.missing") == (None, False)
    assert jsonpath_get(obj, ".spec.a[3]") == (None, False)


def test_defaults_and_a_printer_row() -> None:
    crd: JSON = {
        "metadata": {"name": "widgets.g.io", "uid": "u"},
        "spec": {
            "group": "g.io", "scope": "Cluster", "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": True, "storage": True}],
        },
    }  # fmt: skip
    crd_strategy.prepare_create(crd)
    assert crd["spec"]["names"] == {
        "plural": "widgets", "kind": "Widget", "singular": "widget", "listKind": "WidgetList",
    }  # fmt: skip
    assert crd["spec"]["conversion"] == {"strategy": "None"}
    assert crd["status"]["storedVersions"] == ["v1"]
    [(info, cr)] = served_versions(crd)
    assert (info.namespaced, info.subresources) == (False, ())
    printer = table_printer(cr)  # no printer columns: NAME and Age
    assert [c.name for c in printer.columns] == ["Name", "Age"]
    now = dt.datetime(2026, 1, 1, 0, 10, tzinfo=dt.UTC)
    obj = {"metadata": {"name": "w", "creationTimestamp": "2026-01-01T00:00:00Z"}}
    assert printer.print_row(obj, now) == (["w", "10m"], [])


async def test_none_conversion_and_the_bytes_check() -> None:
    obj = {"apiVersion": "g.io/v1", "kind": "Widget", "spec": {"ref": {"apiVersion": "g.io/v2"}}}
    [converted] = await NoneConverter().convert([obj], "g.io/v2")
    assert converted["apiVersion"] == "g.io/v2" and converted["spec"] == obj["spec"]
    assert _already_in(b'{"apiVersion":"g.io/v1","kind":"Widget"}', "g.io/v1")
    # two apiVersions (an embedded reference): decoded, never trusted from the bytes
    assert not _already_in(b'{"apiVersion":"g.io/v2","spec":{"apiVersion":"g.io/v1"}}', "g.io/v1")
    # managedFields name the version they were written in: the same one is no reason
    managed = b'{"apiVersion":"g.io/%s","metadata":{"managedFields":[{"apiVersion":"g.io/v1"}]}}'
    assert _already_in(managed % b"v1", "g.io/v1")
    assert not _already_in(managed % b"v2", "g.io/v1")
    assert not _already_in(managed % b"v1", "g.io/v2")
    # none at all, or a longer version that starts with the wanted one
    assert not _already_in(b'{"kind":"Widget"}', "g.io/v1")
    assert not _already_in(managed % b"v1beta1", "g.io/v1")
    assert not _already_in(b'{"apiVersion":"g.io/v1","x":{"apiVersion":"g.io/v1beta1"}}', "g.io/v1")
