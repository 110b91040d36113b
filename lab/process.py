"""Stopping a child process by its own PID: SIGTERM (a clean shutdown), then SIGKILL
after a grace period. The one way the lab, its servers and the tests end what they
started; never by name, never a process group."""

from __future__ import annotations

import signal
import subprocess
from typing import Any

__all__ = ["stop_process"]


def stop_process(process: subprocess.Popen[Any], timeout: float = 10.0) -> int:
    """End ``process`` and return its exit code: SIGTERM, then SIGKILL if it is still
    running after ``timeout`` seconds. Harmless on a process that has already exited."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
    return process.wait()
