"""``responsewriter.writable_headers``: the last response-prepare hook. Printable ASCII
(the common case, checked without the regex) is left alone; a tab stays; control
characters become spaces and lone surrogates (bytes that were not UTF-8) U+FFFD."""

from __future__ import annotations

import asyncio

from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from proxy.endpoints.responsewriter import writable_headers


def _written(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    response = web.Response()
    response.headers.clear()
    for key, value in pairs:
        response.headers.add(key, value)
    asyncio.run(writable_headers(make_mocked_request("GET", "/"), response))
    return list(response.headers.items())


def test_printable_ascii_and_tabs_stay_as_they_are() -> None:
    pairs = [("Content-Type", "application/json"), ("Warning", '299 - "a\tb"'),
             ("Warning", "299 - second")]  # fmt: skip
    assert _written(pairs) == pairs


def test_control_characters_and_surrogates_are_replaced_in_order() -> None:
    pairs = [("X-A", "one\ntwo"), ("X-B", "caf\udce9"), ("X-A", "three\x7f")]
    assert _written(pairs) == [("X-A", "one two"), ("X-B", "caf\ufffd"), ("X-A", "three ")]


def test_non_ascii_that_is_valid_stays() -> None:
    assert _written([("X-Name", "café")]) == [("X-Name", "café")]
