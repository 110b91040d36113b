"""What ``watchcache bench`` (:mod:`lab.bench`) runs against: its own etcd and servers
(the default one, one with ``ConsistentListFromCache``, one without the index), or an
external server, and the bytes floor; the URLs and the PIDs whose CPU and RSS count."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab import bench_crd, bench_floor
from lab.apiserver import APIServer, cli_command
from lab.etcd import EtcdCluster
from lab.process import stop_process

__all__ = ["CONSISTENT_FLAG", "NOINDEX_FLAG", "NOSNAPSHOT_FLAG", "Topology", "external",
           "server_has_flag", "start_floor", "start_own"]

NOINDEX_FLAG = "--watch-cache-index=false"
# the bench's other servers share the main one's etcd and prefix: they leave the
# kubernetes Service's endpoints to it (each would write its own port)
SECONDARY_FLAG = "--endpoint-reconciler-type=none"
CONSISTENT_FLAG = "--feature-gates=ConsistentListFromCache=true"
# the third server is also the cache as it was before snapshots: its pages after the
# first come from etcd (list_paginated), the default server's from the cache
NOSNAPSHOT_FLAG = "--feature-gates=ListFromCacheSnapshot=false"


def server_has_flag(flag: str) -> bool:
    """Whether ``watchcache serve --help`` lists ``flag`` (its name before ``=``)."""
    name = flag.split("=")[0]
    cmd = cli_command("serve", "--help")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    return name in out.stdout + out.stderr


@dataclass
class Topology:
    """What the bench runs against: URLs and the PIDs to account."""

    etcd_endpoints: list[str]
    main: str
    consistent: str | None = None
    noindex: str | None = None
    floor: str | None = None
    processes: dict[str, list[int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)
    stoppers: list[Any] = field(default_factory=list)
    servers: dict[str, APIServer] = field(default_factory=dict)
    etcd_version: str = "?"
    etcd_binary: str = "?"
    etcd_members: int = 0

    def stop(self) -> None:
        for s in reversed(self.stoppers):
            s()
        self.stoppers.clear()


def start_own(workdir: Path, *, custom_resources: bool) -> Topology:
    """A real etcd and the bench's servers on it: the default one, one with
    ``ConsistentListFromCache``, one without the ``spec.nodeName`` index and snapshots
    (each when ``watchcache serve`` has the flag)."""
    cluster = EtcdCluster(size=1).start()
    topo = Topology(cluster.endpoints, "", etcd_version=cluster.version_string,
                    etcd_binary=cluster.binary, etcd_members=1)  # fmt: skip
    topo.stoppers.append(cluster.stop)
    try:
        topo.processes["etcd"] = [m.pid for m in cluster.members if m.pid]
        servers: list[tuple[str, tuple[str, ...]]] = [("server", ())]
        if server_has_flag(CONSISTENT_FLAG):
            servers.append(("server-consistent", (CONSISTENT_FLAG,)))
        else:
            for name in ("list_consistent", "paged_list_consistent"):
                topo.unavailable[name] = "the server has no --feature-gates flag yet"
        if server_has_flag(NOINDEX_FLAG):
            servers.append(("server-noindex", (NOINDEX_FLAG, NOSNAPSHOT_FLAG)))
        else:
            topo.unavailable["field_cache_noindex"] = (
                f"the server has no {NOINDEX_FLAG.split('=')[0]} flag yet")
        for key, extra in servers:
            if key == "server" and custom_resources:
                extra = bench_crd.server_args(workdir)  # the widgets' spec.color index
            if key != "server":  # one server keeps the kubernetes Service (same etcd)
                extra = (*extra, SECONDARY_FLAG)
            srv = APIServer(cluster.endpoints, extra_args=extra, log_path=workdir / f"{key}.log")
            srv.start()
            topo.stoppers.append(srv.stop)
            topo.processes[key] = [srv.pid]
            topo.servers[key] = srv
            url = srv.url
            if key == "server":
                topo.main = url
            elif key == "server-consistent":
                topo.consistent = url
            else:
                topo.noindex = url
    except BaseException:
        topo.stop()
        raise
    return topo


def external(server: str, etcd_servers: list[str]) -> Topology:
    """A server the bench did not start (``--server``): nothing of it is accounted."""
    topo = Topology(etcd_servers, server, etcd_members=len(etcd_servers),
                    etcd_binary="external, --etcd-servers")
    topo.processes["server"] = []
    topo.processes["etcd"] = []
    for name in ("list_consistent", "paged_list_consistent"):
        topo.unavailable[name] = "--server given: no second server with the gate on"
    topo.unavailable["field_cache_noindex"] = "--server given: no server without the index"
    if not etcd_servers:
        topo.unavailable["floor_etcd_range"] = "no --etcd-servers given"
    topo.notes.append("Run against an external server: CPU and RSS are not accounted.")
    return topo


def start_floor(topo: Topology, body: bytes, protobuf_body: bytes, workdir: Path) -> None:
    path, pb_path = workdir / "floor-body.json", workdir / "floor-body.pb"
    path.write_bytes(body)
    pb_path.write_bytes(protobuf_body)
    proc, topo.floor = bench_floor.spawn(path, protobuf=pb_path)
    topo.stoppers.append(lambda: stop_process(proc))
    topo.processes["floor"] = [proc.pid]
