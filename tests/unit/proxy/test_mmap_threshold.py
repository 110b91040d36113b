"""glibc's mmap threshold stays fixed once the server set it: a large block freed does
not move later ones of its size into the heap, where they would stay after being freed
(proxy.server.mmap_threshold). Observed with glibc's own count of mapped blocks, in a
fresh interpreter each time (the setting is process-wide)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

# a 1 MiB block freed (glibc then raises a threshold it adjusts), another allocated:
# mapped (counted in mallinfo2's hblks) only when the threshold stayed where it was
PROBE = """
import ctypes, os, sys
from proxy.server import mmap_threshold
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks",
        "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
fixed = mmap_threshold.fix() if sys.argv[1] == "fix" else None
first = bytearray(1 << 20)
del first
before = libc.mallinfo2().hblks
second = bytearray(1 << 20)
print(fixed, libc.mallinfo2().hblks - before)
"""


def _probe(mode: str, **env: str) -> str:
    run = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin", **env}, check=True, cwd=REPO)  # fmt: skip
    return run.stdout.strip()


def test_a_freed_block_leaves_the_threshold_where_the_server_set_it() -> None:
    assert _probe("fix") == "True 1"  # the second block is mapped: freed, it is unmapped
    assert _probe("as-is") == "None 0"  # glibc alone: the heap, held after it is freed


def test_an_operators_threshold_is_kept() -> None:
    assert _probe("fix", MALLOC_MMAP_THRESHOLD_="4194304") == "False 0"
