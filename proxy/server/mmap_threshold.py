"""glibc's mmap threshold, fixed at its default (watchcache's own concern: Go's runtime
has an allocator of its own; CPython asks glibc's malloc for every object over 512
bytes and for its buffers).

glibc serves an allocation of at least the mmap threshold (128 KiB) with a mapping of
its own, unmapped when freed, and then raises the threshold to the size of that freed
block (up to 32 MiB) so that the next one comes from the heap. A watch cache primed by
a LIST reads etcd in pages of ~1 MiB (``storage.etcd3.lister.PAGE_BYTES``): the first
page's buffers (the likely ones) raised the threshold, later pages came from the heap,
and the cached values allocated between two pages kept those freed blocks from ever
going back to the system. Measured (10,000 and 30,000 small pods primed by a LIST,
slope of the RSS, docs/performance.md): 34 and 140 bytes a pod in two runs and 3-4 MB
in all that the process held and did not use. A threshold set with ``mallopt`` is not
adjusted any more, so every block of 128 KiB or more is mapped and unmapped (~50-100 µs
for a 1 MiB page: page faults on fresh memory), and freed memory returns to the system
when it is freed.

An operator who set the threshold (``MALLOC_MMAP_THRESHOLD_``, or
``glibc.malloc.mmap_threshold`` in ``GLIBC_TUNABLES``) keeps that choice; other C
libraries are left alone.
"""

from __future__ import annotations

import ctypes
import logging
import os

log = logging.getLogger(__name__)

M_MMAP_THRESHOLD = -3  # glibc's malloc.h
DEFAULT_THRESHOLD = 128 * 1024


def fix(threshold: int = DEFAULT_THRESHOLD) -> bool:
    """Fix glibc's mmap threshold at ``threshold`` bytes; whether it was set (False: not
    glibc, or the operator's environment chose)."""
    if "MALLOC_MMAP_THRESHOLD_" in os.environ or "mmap_threshold" in os.environ.get(
        "GLIBC_TUNABLES", ""
    ):
        return False
    libc = ctypes.CDLL(None)  # the symbols the process already has
    if not hasattr(libc, "gnu_get_libc_version") or not hasattr(libc, "mallopt"):
        return False
    libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    libc.mallopt.restype = ctypes.c_int
    if libc.mallopt(M_MMAP_THRESHOLD, threshold) != 1:
        log.warning("mallopt(M_MMAP_THRESHOLD, %d) failed; glibc adjusts it", threshold)
        return False
    return True
