"""Which worker this process is, when ``watchcache serve --workers N`` runs N serving
processes on the same ports (``proxy.app.workers`` starts them): the supervisor names
each worker in its environment (``WATCHCACHE_WORKER=K/N``, K from 1), and the worker
then listens with SO_REUSEPORT, opens a private port of its own on loopback, names
itself on every response (``X-Watchcache-Worker: K``) and in every metric
(``worker="K"``), and, with N > 1, competes for the Lease of the run-once controllers.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "CONTROLLERS_LEASE",
    "INSTANCE_HEADER",
    "INSTANCE_ID_ENV",
    "MAX_DEFAULT_WORKERS",
    "WORKER_ENV",
    "WORKER_HEADER",
    "WorkerIdentity",
    "usable_cores",
    "worker_identity",
]

# Every response names the server that sent it, so a launcher polling /readyz can tell
# its own server from another one already listening on the port (kube-apiserver's
# counterpart is its identity lease, apiserver-<id>). The launcher chooses the id; the
# workers of one server share it.
INSTANCE_HEADER = "X-Watchcache-Instance"
INSTANCE_ID_ENV = "WATCHCACHE_INSTANCE_ID"
WORKER_ENV = "WATCHCACHE_WORKER"
WORKER_HEADER = "X-Watchcache-Worker"
# kube-system/<name>: the Lease held by the worker that runs the run-once controllers
CONTROLLERS_LEASE = ("kube-system", "watchcache-controllers")
# ``--workers=0`` takes the usable cores, up to this: each worker holds a whole watch
# cache, so memory grows with every one
MAX_DEFAULT_WORKERS = 8


@dataclass(frozen=True)
class WorkerIdentity:
    index: int  # 1..count
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def lease_identity(self, instance: str) -> str:
        """The Lease's holderIdentity: host, server instance, worker and this process
        (client-go's hostname_uuid). Per process, not per worker slot: a restarted
        worker is a new candidate that waits for the dead one's lease to expire, as a
        restarted kube-controller-manager does, instead of taking the record as its own
        while another worker stands ready."""
        return f"{socket.gethostname()}_{instance}_worker-{self.index}_{uuid.uuid4().hex[:8]}"


def worker_identity(env: Mapping[str, str] = os.environ) -> WorkerIdentity | None:
    """This process's identity from ``WATCHCACHE_WORKER`` (None: not a worker)."""
    raw = env.get(WORKER_ENV, "")
    index, _, count = raw.partition("/")
    if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        return None
    return WorkerIdentity(int(index), int(count))


def usable_cores() -> int:
    """The cores this process may run on (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
