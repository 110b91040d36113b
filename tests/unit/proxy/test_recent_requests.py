"""/debug/requests' entries and the access log's lines: the same fields in the same
order, made valid UTF-8, whether the entry is built when the request ends (the log) or
when the page reads it (the recent requests keep each request's raw facts)."""

from __future__ import annotations

import logging

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from proxy.endpoints import metrics
from proxy.endpoints.metrics import RECENT_REQUESTS, RecentRequests
from proxy.request.user import USER_KEY, UserInfo


def _request(path: str, agent: str, user: UserInfo | None) -> web.Request:
    app = web.Application()
    app[RECENT_REQUESTS] = RecentRequests(size=2)
    request = make_mocked_request("GET", path, headers={"User-Agent": agent}, app=app)
    if user is not None:
        request[USER_KEY] = user
    return request


def test_an_entry_has_the_fields_in_order_and_valid_utf8(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bad = "caf\udcc3"  # a byte that was not UTF-8, as aiohttp decodes it
    request = _request("/api/v1/pods?labelSelector=app%3Dweb", "kubectl/v1.32",
                       UserInfo(name=f"alice-{bad}"))  # fmt: skip
    with caplog.at_level(logging.INFO, logger="watchcache.access"):
        metrics._access(request, "LIST", 200, 0.01234)
    (entry,) = request.app[RECENT_REQUESTS].since(0)
    assert list(entry) == ["seq", "at", "verb", "path", "code", "ms", "userAgent", "user"]
    assert entry["seq"] == 1 and entry["at"] == round(float(str(entry["at"])), 3)
    assert entry["path"] == request.path_qs
    assert entry["ms"] == 12.3 and entry["userAgent"] == "kubectl/v1.32"
    assert entry["user"] == "alice-caf\ufffd"
    (line,) = [r.getMessage() for r in caplog.records if r.name == "watchcache.access"]
    logged = orjson.loads(line)
    assert logged == {k: v for k, v in entry.items() if k not in ("seq", "at")}
    assert list(logged) == list(entry)[2:]


def test_no_user_no_user_field_and_a_list_cost_comes_last() -> None:
    request = _request("/api/v1/pods", "curl", None)
    request[metrics._LIST_COST] = {"servedFrom": "cache", "returned": 3}
    metrics._access(request, "LIST", 200, 0.001)
    (entry,) = request.app[RECENT_REQUESTS].since(0)
    assert list(entry) == ["seq", "at", "verb", "path", "code", "ms", "userAgent",
                           "servedFrom", "returned"]  # fmt: skip


def test_since_skips_what_was_read_and_keeps_the_last_size() -> None:
    request = _request("/api/v1/pods", "curl", None)
    for code in (200, 404, 409):
        metrics._access(request, "GET", code, 0.001)
    recent = request.app[RECENT_REQUESTS]
    assert recent.seq == 3
    assert [e["code"] for e in recent.since(0)] == [404, 409]  # size 2
    assert [e["seq"] for e in recent.since(2)] == [3]
