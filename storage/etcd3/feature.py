"""Which storage features the etcd behind a client supports (kube-apiserver's
``storage/feature`` FeatureSupportChecker, for ``RequestWatchProgress``).

etcd's progress notifications were unreliable before 3.4.31 / 3.5.13 (etcd issues
#15220 and #17507: a notification could claim a revision some events of the watch had
not yet been sent for, or reach the wrong watch). On those versions a watch cache must
never request progress.
"""

from __future__ import annotations

import logging

from etcdclient import EtcdClient
from storage.etcd3.translate import call

log = logging.getLogger(__name__)

_LOGGED: set[str] = set()  # etcd versions already logged (once per process)


def progress_requests_supported(version: tuple[int, int, int]) -> bool:
    """etcd versions with the fixes for #15220 and #17507."""
    major, minor, patch = version
    if (major, minor) == (3, 4):
        return patch >= 31
    if (major, minor) == (3, 5):
        return patch >= 13
    return (major, minor) > (3, 5)


async def supports_request_watch_progress(client: EtcdClient, request_timeout: float) -> bool:
    """Read etcd's version (a Status call; storage errors) and decide."""
    status = await call(client.status(), request_timeout, operation="status")
    supported = progress_requests_supported(status.version_tuple)
    if status.version not in _LOGGED:
        _LOGGED.add(status.version)
        log.info("etcd %s: progress requests %s", status.version,
                 "enabled" if supported else "disabled (#15220/#17507)")  # fmt: skip
    return supported
