"""A row rendered from the template kept with a version is the row printed directly,
at any ``now``, for every include option and every kind whose cells hold ages."""

from __future__ import annotations

import datetime as dt
from typing import Any

import orjson
import pytest

from proxy.printers.table import TableConvertor
from storage.interfaces import StoredObject
from tests.unit.proxy.printers.support import NOW, PODS, ago
from tests.unit.proxy.resources import Res

JOBS = Res("batch", "v1", "Job", "jobs")
CRONJOBS = Res("batch", "v1", "CronJob", "cronjobs")
EVENTS = Res("", "v1", "Event", "events")
CONFIGMAPS = Res("", "v1", "ConfigMap", "configmaps")

RESTARTED = {
    "name": "c", "ready": True, "restartCount": 3, "state": {"running": {}},
    "lastState": {"terminated": {"finishedAt": ago(seconds=150)}},
}  # fmt: skip

CASES: list[tuple[Res, dict[str, Any]]] = [
    (PODS, {"metadata": {"name": "p", "namespace": "n", "creationTimestamp": ago(seconds=119),
                         "labels": {"a": "b"}, "resourceVersion": "5"},
            "spec": {"containers": [{"name": "c"}], "nodeName": "node-1"},
            "status": {"phase": "Running", "containerStatuses": [RESTARTED]}}),
    (PODS, {"metadata": {"name": "done"}, "status": {"phase": "Succeeded"}}),  # no times
    (JOBS, {"metadata": {"name": "j", "creationTimestamp": ago(hours=3)},
            "status": {"startTime": ago(hours=2, seconds=7)}}),  # running: DURATION grows
    (JOBS, {"metadata": {"name": "k", "creationTimestamp": ago(days=3)},
            "status": {"startTime": ago(days=3), "completionTime": ago(days=2)}}),
    (CRONJOBS, {"metadata": {"name": "c", "creationTimestamp": ago(days=400)},
                "spec": {"schedule": "* * * * *"}, "status": {"lastScheduleTime": ago(minutes=9)}}),
    (EVENTS, {"metadata": {"name": "e"}, "firstTimestamp": ago(hours=9),
              "lastTimestamp": ago(seconds=1), "message": "it \u2713 \"quoted\"\n"}),
    (CONFIGMAPS, {"metadata": {"name": "m", "creationTimestamp": ago(seconds=30)}}),
]  # fmt: skip

NOWS = [NOW, NOW + dt.timedelta(seconds=0.5), NOW + dt.timedelta(seconds=1),
        NOW + dt.timedelta(minutes=7, microseconds=1), NOW + dt.timedelta(days=700),
        NOW - dt.timedelta(hours=5)]  # fmt: skip


@pytest.mark.parametrize("include", ["None", "Metadata", "Object"])
@pytest.mark.parametrize("version", ["v1", "v1beta1"])
def test_template_rows_equal_rows_printed_at_each_now(include: str, version: str) -> None:
    for res, obj in CASES:
        stored = StoredObject("/k", orjson.dumps(obj), 5)
        for now in NOWS:  # the same version (its one template) at each now
            convertor = TableConvertor(res, include_object=include, table_version=version,
                                       now=now)  # fmt: skip
            assert orjson.loads(convertor.row_json(stored)) == convertor.row(obj)
            assert convertor.row_json(stored) == orjson.dumps(convertor.row(obj))


def test_a_row_is_printed_once_per_version() -> None:
    res, obj = CASES[0]
    stored = StoredObject("/k", orjson.dumps(obj), 5)
    calls = 0
    convertor = TableConvertor(res, now=NOW)
    real = convertor._printer.print_row

    def counting(o: dict[str, Any], now: dt.datetime) -> Any:
        nonlocal calls
        calls += 1
        return real(o, now)

    object.__setattr__(convertor._printer, "print_row", counting)
    try:
        first = convertor.row_json(stored)
        later = TableConvertor(res, now=NOW + dt.timedelta(hours=1))
        object.__setattr__(later, "_printer", convertor._printer)
        later.row_json(stored)
        assert calls == 1
        assert first == orjson.dumps(convertor.row(obj))
    finally:
        object.__setattr__(convertor._printer, "print_row", real)


def test_metadata_stored_by_another_encoder_is_copied() -> None:
    """Go escapes ``<`` as ``\\u003c``: the metadata is not found verbatim in the stored
    bytes, and the row still carries it (re-encoded)."""
    obj = {"metadata": {"name": "p", "annotations": {"x": "<b>"}}}
    data = orjson.dumps(obj).replace(b"<", b"\\u003c")
    convertor = TableConvertor(PODS, now=NOW)
    row = orjson.loads(convertor.row_json(StoredObject("/k", data, 2)))
    assert row == convertor.row(obj)


def test_user_text_shaped_like_an_age_mark_is_printed_as_text() -> None:
    obj = {"metadata": {"name": "\0age:0\0", "creationTimestamp": ago(seconds=5)}}
    convertor = TableConvertor(CONFIGMAPS, include_object="None", now=NOW)
    row = orjson.loads(convertor.row_json(StoredObject("/k", orjson.dumps(obj), 2)))
    assert row["cells"] == ["\0age:0\0", 0, "5s"]  # NAME, DATA, AGE


def test_one_request_renders_each_rows_own_ages() -> None:
    """A request renders an age once per start (``TableConvertor._age``): rows sharing
    a creation second and rows of other seconds, one and two ages, each get their own."""
    seconds = [5, 5, 119, 5, 3600 * 30, 119, 0, 86400 * 9]
    objects = [{"metadata": {"name": f"p{i}", "creationTimestamp": ago(seconds=s)},
                "status": {"containerStatuses": [RESTARTED] if i % 2 else []}}
               for i, s in enumerate(seconds)]  # fmt: skip
    for now in NOWS:
        convertor = TableConvertor(PODS, now=now)
        rows = [convertor.row_json(StoredObject(f"/k{i}", orjson.dumps(o), 5))
                for i, o in enumerate(objects)]  # fmt: skip
        assert rows == [orjson.dumps(convertor.row(o)) for o in objects]


def test_a_new_version_has_its_own_metadata() -> None:
    """Where the metadata is in the stored bytes is kept with the version's template: a
    version whose metadata grew (or moved) is sliced where it is in that version."""
    first = {"metadata": {"name": "p", "labels": {"a": "b"}, "resourceVersion": "5"}}
    second = {"kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b", "c": "d" * 50},
                                          "resourceVersion": "9"}}  # fmt: skip
    convertor = TableConvertor(PODS, now=NOW)
    for rv, obj in ((5, first), (9, second), (5, first)):
        row = convertor.row_json(StoredObject("/k", orjson.dumps(obj), rv))
        assert row == orjson.dumps(convertor.row(obj))
