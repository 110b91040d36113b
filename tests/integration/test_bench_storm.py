"""``watchcache bench --scenarios relist_storm`` (issue 25 §6) at a small K: each round's
relists were served from where the round says, by the cache's index where it says, and
the counts add up. Routing and counts only: the timings stay in the bench."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from lab.apiserver import cli_command
from storage.etcd3.feature import progress_requests_supported

# etcd, three bench servers and the storm's two, seeding, three rounds: ~40-90 s loaded
pytestmark = [pytest.mark.etcd, pytest.mark.slow, pytest.mark.timeout(300)]

PODS, AGENTS = 60, 12  # no --nodes: the storm seeds a node per agent, 5 pods on each


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("storm")
    r = subprocess.run(
        cli_command("bench", "--quick", "--pods", str(PODS), "--storm", str(AGENTS),
                    "--scenarios", "relist_storm", "--no-custom-resources", "--out", str(out),
                    "--quiet"),
        capture_output=True, text=True, timeout=280,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    return out, orjson.loads((out / "results.json").read_bytes())


def _rounds(res: dict[str, Any]) -> dict[str, dict[str, Any]]:
    (run,) = res["runs"]
    storm = run["relist_storm"]
    assert storm["agents"] == [AGENTS] and storm["nodes"] == AGENTS
    assert storm["distinct_nodes"] == [AGENTS]
    return {r["round"]: r for r in storm["rounds"]}


def test_every_round_answers_every_agent(results: tuple[Path, dict[str, Any]]) -> None:
    _, res = results
    rounds = _rounds(res)
    assert list(rounds) == ["unset", "rv0", "consistent"]
    for r in rounds.values():
        assert r["agents"] == AGENTS and r["codes"] == {"200": AGENTS}
        assert sum(r["served_from"].values()) == AGENTS
        # every node's pods once: the relists together return the whole data set
        assert r["returned"] == PODS
        # APF saw them as kubelets (impersonated system:node:<name>, flow schema system-nodes)
        assert r["apf"]["dispatched"] == AGENTS
        assert r["light_requests"] > 0 and r["light_codes"] == {"200": r["light_requests"]}


def test_unset_rv_scans_every_pod_in_etcd_per_relist(results: tuple[Path, dict[str, Any]]) -> None:
    _, res = results
    r = _rounds(res)["unset"]
    assert r["served_from"] == {"etcd": AGENTS}
    assert r["fetched"] == AGENTS * PODS and r["storage_fetched"] == AGENTS * PODS
    assert r["cache_fetched"] == 0
    rv0 = _rounds(res)["rv0"]
    assert r["etcd_sent_bytes"] > 10 * rv0["etcd_sent_bytes"]


def test_rv0_and_consistent_use_the_node_index(results: tuple[Path, dict[str, Any]]) -> None:
    _, res = results
    rounds = _rounds(res)
    rv0 = rounds["rv0"]
    assert rv0["served_from"] == {"cache": AGENTS}
    assert rv0["fetched"] == rv0["cache_fetched"] == PODS and rv0["storage_fetched"] == 0
    cons = rounds["consistent"]
    major, minor, patch = (int(x) for x in res["meta"]["etcd_version"].split("."))
    # an etcd without the progress-notify fixes sends the consistent read to etcd
    where = "cache" if progress_requests_supported((major, minor, patch)) else "etcd"
    assert cons["served_from"] == {where: AGENTS}
    if where == "cache":
        assert cons["fetched"] == PODS and cons["storage_fetched"] == 0


def test_the_report_has_the_storm(results: tuple[Path, dict[str, Any]]) -> None:
    out, res = results
    report = (out / "report.md").read_text()
    assert "### Relist storm (issue 25 §6)" in report
    assert f"![relist storm](storm-{PODS}.png)" in report
    assert (out / f"storm-{PODS}.png").stat().st_size > 10_000
    assert any("relist storm" in n for n in res["meta"]["notes"])
