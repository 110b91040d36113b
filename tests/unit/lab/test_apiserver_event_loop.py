"""The launcher's ``WATCHCACHE_EVENT_LOOP``: how a whole suite runs its servers on
uvloop (docs/performance.md) without any test naming a loop."""

from __future__ import annotations

import pytest

from lab.apiserver import EVENT_LOOP_ENV, APIServer


def test_unset_adds_no_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(EVENT_LOOP_ENV, raising=False)
    command = APIServer(["http://127.0.0.1:2379"], extra_args=("--v=2",)).command()
    assert not [a for a in command if a.startswith("--event-loop")]


def test_set_adds_the_loop_last(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(EVENT_LOOP_ENV, "uvloop")
    command = APIServer(["http://127.0.0.1:2379"], extra_args=("--v=2",)).command()
    assert command[-2:] == ["--v=2", "--event-loop=uvloop"]
    verbatim = APIServer([], argv=("--port=1",)).command()
    assert verbatim[-2:] == ["--port=1", "--event-loop=uvloop"]


def test_a_server_that_names_its_loop_keeps_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(EVENT_LOOP_ENV, "uvloop")
    command = APIServer([], extra_args=("--event-loop=asyncio",)).command()
    assert [a for a in command if a.startswith("--event-loop")] == ["--event-loop=asyncio"]


def test_the_loop_a_server_runs_on_is_named_for_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(EVENT_LOOP_ENV, raising=False)
    assert APIServer([]).event_loop == "uvloop"  # serve's default, uvloop installed
    assert APIServer([], extra_args=("--event-loop=asyncio",)).event_loop == "asyncio"
    assert APIServer([], argv=("--event-loop", "asyncio")).event_loop == "asyncio"
    monkeypatch.setenv(EVENT_LOOP_ENV, "asyncio")
    assert APIServer([]).event_loop == "asyncio"
