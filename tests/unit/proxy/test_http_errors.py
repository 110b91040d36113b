"""proxy.server.http_errors without a server: which paths go-restful claims, and how
malformed requests are logged."""

from __future__ import annotations

import logging

import pytest
from aiohttp.http_exceptions import BadHttpMethod, LineTooLong

from proxy.server.http_errors import ProtocolLogger, is_api_path, protocol_options

GROUPS = ["apps", "batch"]


@pytest.mark.parametrize(
    ("path", "claimed"),
    [("/api", True), ("/api/v1/foos", True), ("/api/v9", True), ("/apis", True),
     ("/apis/", True), ("/apis/apps", True), ("/apis/apps/v9/x", True),
     ("/apis/foo.example.com", False), ("/apis/foo.example.com/v1/bars", False),
     ("/foo", False), ("/", False), ("/apifoo", False)],
)  # fmt: skip
def test_paths_go_restful_claims(path: str, claimed: bool) -> None:
    assert is_api_path(path, GROUPS) is claimed


def test_malformed_requests_are_one_debug_line(caplog: pytest.LogCaptureFixture) -> None:
    logger = ProtocolLogger(logging.getLogger("aiohttp.server"))
    with caplog.at_level(logging.DEBUG, logger="aiohttp.server"):
        logger.exception("Error handling request from %s", "1.2.3.4", exc_info=LineTooLong("x"))
        logger.debug("Error handling request from %s", "1.2.3.4", exc_info=BadHttpMethod("FOO"))
    assert [r.levelno for r in caplog.records] == [logging.DEBUG, logging.DEBUG]
    assert all(r.exc_info is None for r in caplog.records)
    assert "malformed request refused" in caplog.records[0].getMessage()


def test_other_errors_keep_their_traceback(caplog: pytest.LogCaptureFixture) -> None:
    logger = ProtocolLogger(logging.getLogger("aiohttp.server"))
    try:
        raise RuntimeError("boom")
    except RuntimeError as e:
        with caplog.at_level(logging.DEBUG, logger="aiohttp.server"):
            logger.exception("Unhandled exception", exc_info=e)
    (record,) = caplog.records
    assert record.levelno == logging.ERROR and record.exc_info is not None


def test_request_bodies_are_not_decompressed() -> None:
    assert protocol_options()["auto_decompress"] is False
