"""``watchcache etcd``: run a real etcd (one member or a cluster) until Ctrl-C."""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path

from lab.etcd import EtcdCluster


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="watchcache etcd", description=__doc__)
    p.add_argument("--members", type=int, default=1, help="cluster size (default 1)")
    p.add_argument("--data-dir", type=Path, default=None, help="kept after exit if given")
    p.add_argument("--durable", action="store_true", help="fsync (slower; default: test speed)")
    a = p.parse_args(argv)
    if a.members < 1:
        p.error("--members must be >= 1")
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    cluster = EtcdCluster(size=a.members, data_root=a.data_dir, fast=not a.durable)
    with cluster:
        print(f"etcd {cluster.version_string}, {a.members} member(s)")
        print(f"endpoints: {','.join(cluster.endpoints)}")
        for m in cluster.members:
            print(f"  {m.name} pid={m.pid} client={m.client_url} data={m.data_dir}")
        print("Ctrl-C to stop", flush=True)
        stop.wait()
    return 0
