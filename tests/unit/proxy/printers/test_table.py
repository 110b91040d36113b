"""The generic printer: the default NAME/AGE handler, DefaultTableConvertor, includeObject,
list metadata, watch events, PartialObjectMetadata."""

from __future__ import annotations

import pytest

from proxy.printers.table import (
    TableError,
    TableWatchEncoder,
    as_partial_object_metadata,
    as_partial_object_metadata_list,
    default_columns_table,
    table_watch_event,
    to_table,
)
from tests.unit.proxy.printers.support import NOW, PODS, ago, pod
from tests.unit.proxy.resources import Res


def test_generic_name_age_and_default_convertor() -> None:
    lease = {"metadata": {"name": "l", "creationTimestamp": ago(seconds=5)}}
    table = to_table(Res("example.io", "v1", "Widget", "widgets"), [lease], now=NOW)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Age"]
    assert table["rows"][0]["cells"] == ["l", "5s"]
    default = default_columns_table([lease])
    assert [c["name"] for c in default["columnDefinitions"]] == ["Name", "Created At"]
    assert default["columnDefinitions"][1]["type"] == "date"
    assert default["rows"][0]["cells"] == ["l", lease["metadata"]["creationTimestamp"]]


def test_include_object_and_list_meta() -> None:
    obj = pod(phase="Running")
    meta = {"resourceVersion": "42", "continue": "tok", "remainingItemCount": 3}
    table = to_table(PODS, [obj], list_meta=meta, now=NOW, table_version="v1beta1")
    assert table["apiVersion"] == "meta.k8s.io/v1beta1"
    assert table["kind"] == "Table"
    assert table["metadata"] == meta
    assert table["rows"][0]["object"] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1beta1",
        "metadata": obj["metadata"],
    }
    full = to_table(PODS, [obj], include_object="Object", list_meta={}, now=NOW)
    assert full["rows"][0]["object"] is obj
    assert full["metadata"] == {}
    none = to_table(PODS, [obj], include_object="None", now=NOW, no_headers=True)
    assert none["rows"][0]["object"] is None
    assert none["columnDefinitions"] == []
    assert none["metadata"] == {"resourceVersion": "7"}  # a single GET: the object's RV
    with pytest.raises(TableError, match='unrecognized includeObject value: "Bogus"'):
        to_table(PODS, [obj], include_object="Bogus", now=NOW)


def test_watch_event_table() -> None:
    event = table_watch_event(PODS, "MODIFIED", pod(phase="Running"), now=NOW)
    assert event["type"] == "MODIFIED"
    assert event["object"]["kind"] == "Table"
    assert len(event["object"]["rows"]) == 1
    status = {"kind": "Status", "code": 410}
    assert table_watch_event(PODS, "ERROR", status, now=NOW) == {"type": "ERROR", "object": status}


def test_watch_encoder_sends_headers_on_the_first_printed_event_only() -> None:
    encoder = TableWatchEncoder(PODS, include_object="Object")
    bookmark = {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "9"}}
    assert encoder.encode("BOOKMARK", bookmark, NOW) == {"type": "BOOKMARK", "object": bookmark}
    first = encoder.encode("ADDED", pod(phase="Running"), NOW)["object"]
    second = encoder.encode("MODIFIED", pod(phase="Running"), NOW)["object"]
    assert len(first["columnDefinitions"]) == 9
    assert second["columnDefinitions"] == []
    assert second["rows"][0]["object"]["spec"]  # includeObject=Object
    assert second["metadata"] == {"resourceVersion": "7"}


def test_partial_object_metadata() -> None:
    obj = pod()
    assert as_partial_object_metadata(obj, "v1beta1") == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1beta1",
        "metadata": obj["metadata"],
    }
    listed = as_partial_object_metadata_list([obj], {"resourceVersion": "3", "continue": ""})
    assert listed["kind"] == "PartialObjectMetadataList"
    assert listed["metadata"] == {"resourceVersion": "3"}
    assert listed["items"] == [as_partial_object_metadata(obj)]
