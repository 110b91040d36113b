"""The reference bench reads a page's ``continue`` token from its ListMeta alone, for
both servers' shapes of a list and a Table, gzipped or not, and falls back to parsing the
whole page where the ListMeta is not at its head."""

from __future__ import annotations

import gzip

import orjson
import pytest

from lab.bench_reference import continue_token


def _table(token: str | None, rows: int = 2000) -> bytes:
    meta = {"resourceVersion": "42", **({"continue": token} if token else {}),
            "remainingItemCount": 7}  # fmt: skip
    return orjson.dumps({
        "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
        "columnDefinitions": [{"name": "continue", "description": '"continue":"no"'}],
        "rows": [{"cells": [f"pod-{i}", "é" * 20], "object": {"metadata": {
            "name": f"pod-{i}", "continue": "not-this"}}} for i in range(rows)],
    })  # fmt: skip


@pytest.mark.parametrize("gzipped", [False, True])
@pytest.mark.parametrize("token", ["eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NDJ9", None])
def test_the_token_is_the_list_metas(token: str | None, gzipped: bool) -> None:
    body = _table(token)
    assert len(body) > 128 * 1024  # longer than the head read
    if gzipped:
        body = gzip.compress(body)
    assert continue_token(body, gzipped=gzipped) == (token or "")


def test_only_the_head_is_parsed() -> None:
    """A page cut after its head (what the whole parse would reject) still gives its
    token: the rows are never parsed."""
    body = _table("abc")[:100_000]
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(body)
    assert continue_token(body, gzipped=False) == "abc"
    assert continue_token(gzip.compress(body), gzipped=True) == "abc"


def test_a_list_meta_after_the_items_is_found_by_the_whole_parse() -> None:
    body = orjson.dumps({"items": [{"metadata": {"continue": "wrong"}}],
                         "metadata": {"continue": "right"}})  # fmt: skip
    assert continue_token(body, gzipped=False) == "right"
