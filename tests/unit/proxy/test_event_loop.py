"""``--event-loop``: asyncio's loop or uvloop's runs the same coroutine; without the flag
uvloop's when it is installed, else asyncio's; a name that is not a loop is a
configuration error (``proxy.server.event_loop``)."""

from __future__ import annotations

import asyncio
import sys

import pytest

from proxy.options.settings import ConfigError, load_settings
from proxy.server import event_loop


async def _loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_both_loops_run_the_server_coroutine() -> None:
    assert event_loop.run(_loop_module(), "uvloop").startswith("uvloop")
    assert event_loop.run(_loop_module(), "asyncio").startswith("asyncio")


def test_flag_values(monkeypatch: pytest.MonkeyPatch) -> None:
    base = ["--etcd-servers=http://127.0.0.1:2379"]
    assert load_settings(base).event_loop == ""  # no flag: event_loop.default_name()
    assert load_settings([*base, "--event-loop=asyncio"]).event_loop == "asyncio"
    assert load_settings([*base, "--event-loop=uvloop"]).event_loop == "uvloop"
    with pytest.raises(ConfigError, match="asyncio or uvloop"):
        load_settings([*base, "--event-loop=trio"])
    monkeypatch.setitem(sys.modules, "uvloop", None)  # as if the extra were not installed
    with pytest.raises(event_loop.EventLoopUnavailable, match="watchcache\\[uvloop\\]"):
        event_loop.loop_factory("uvloop")


def test_default_is_uvloop_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    assert event_loop.default_name() == "uvloop"  # a test dependency
    assert event_loop.run(_loop_module(), "").startswith("uvloop")
    monkeypatch.setitem(sys.modules, "uvloop", None)  # as if the extra were not installed
    assert event_loop.default_name() == "asyncio"
    assert event_loop.run(_loop_module(), "").startswith("asyncio")
    # named explicitly, a missing uvloop stays an error, never a silent fallback
    with pytest.raises(event_loop.EventLoopUnavailable):
        event_loop.run(_loop_module(), "uvloop")
