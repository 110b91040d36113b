"""HumanDuration as kubectl prints ages (apimachinery duration_test.go cases)."""

from __future__ import annotations

import datetime as dt

import pytest

from proxy.printers.duration import human_duration


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (125, "2m5s"),
        (600, "10m"),
        (179 * 60, "179m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 60, "3h1m"),
        (8 * 3600, "8h"),
        (47 * 3600, "47h"),
        (48 * 3600, "2d"),
        (50 * 3600, "2d2h"),
        (8 * 86400, "8d"),
        (730 * 86400, "2y"),
        (731 * 86400, "2y1d"),
        (8 * 365 * 86400, "8y"),
    ],
)
def test_human_duration(seconds: int, text: str) -> None:
    assert human_duration(dt.timedelta(seconds=seconds)) == text
