"""The relist storm's report section: a table whose every row has the header's cells,
failures counted apart from 429 and 504, and the storm's node choice."""

from __future__ import annotations

from pathlib import Path

import orjson

from lab.bench_storm import nodes_for
from lab.bench_storm_report import markdown

RESULTS = Path(__file__).resolve().parents[3] / "docs" / "bench" / "storm" / "results.json"


def _cells(line: str) -> int:
    return line.count("|") - 1


def test_every_row_has_the_header_cells() -> None:
    storm = orjson.loads(RESULTS.read_bytes())["runs"][0]["relist_storm"]
    lines = markdown(storm, 10000)
    table = [ln for ln in lines if ln.startswith("|")]
    assert len(table) == 2 + len(storm["rounds"])
    assert {_cells(ln) for ln in table} == {16}
    assert lines[-2] == "![relist storm](storm-10000.png)"


def test_failed_connections_are_counted_apart() -> None:
    storm = orjson.loads(RESULTS.read_bytes())["runs"][0]["relist_storm"]
    one = {**storm["rounds"][0], "codes": {"200": 5, "429": 3, "504": 2, "0": 4}}
    row = [ln for ln in markdown({**storm, "rounds": [one]}, 1) if ln.startswith("| ")][-1]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[4:8] == ["5", "3", "2", "4"]


def test_agents_relist_distinct_nodes_then_wrap() -> None:
    assert nodes_for(3, 5) == ["node-000", "node-001", "node-002"]
    assert len(set(nodes_for(7, 5))) == 5 and nodes_for(7, 5)[5] == nodes_for(7, 5)[0]
