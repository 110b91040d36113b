"""The shared column helpers: label selectors as kubectl prints them."""

from __future__ import annotations

from proxy.printers.columns import format_label_selector


def test_label_selector_formatting() -> None:
    assert format_label_selector(None) == ""
    sel = {
        "matchExpressions": [
            {"key": "z", "operator": "DoesNotExist"},
            {"key": "a", "operator": "Exists"},
            {"key": "m", "operator": "NotIn", "values": ["y", "x"]},
        ]
    }
    assert format_label_selector(sel) == "a,m notin (x,y),!z"
