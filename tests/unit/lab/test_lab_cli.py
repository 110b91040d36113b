"""The lab's own words for failures, and one server log per run."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lab.lab_cli import LabError, describe, new_log


def test_an_exception_group_is_unwrapped_into_its_causes() -> None:
    async def fail(msg: str) -> None:
        raise ConnectionRefusedError(msg)

    async def main() -> None:
        async with asyncio.TaskGroup() as tg:
            tg.create_task(fail("connect to 127.0.0.1:8080 refused"))
            tg.create_task(fail("connect to 127.0.0.1:8080 refused"))

    try:
        asyncio.run(main())
    except BaseException as e:
        lines = describe(e)
    assert lines == ["ConnectionRefusedError: connect to 127.0.0.1:8080 refused"]


def test_a_lab_error_is_said_in_its_own_words() -> None:
    assert describe(LabError("port 8080 is taken\nchoose another")) == [
        "port 8080 is taken", "choose another"]  # fmt: skip


def test_one_log_per_run_the_previous_kept_aside(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("run 1\n")
    assert new_log(log) == log and not log.exists()
    assert (tmp_path / "server.log.1").read_text() == "run 1\n"
