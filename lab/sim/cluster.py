"""The simulated cluster: node agents, a scheduler, the ReplicaSet, Deployment and Job
controllers, the garbage collector, the namespace, serviceaccounts and root CA publisher
controllers, the disruption, node lifecycle (with taint eviction), EndpointSlice, pod GC
and CSR signing controllers, background churn and one Event recorder they share, all ordinary
API clients of one server; and the cluster network's egress for the API server
(``--konnectivity-uds-name``, :mod:`lab.sim.konnectivity`). The server should run with
``--lifecycle-controllers=true`` (the lab passes it), so that DELETE leaves to these
controllers what kube-apiserver leaves to kubelets and kube-controller-manager.

    watchcache sim --server URL [--churn RATE] [--renew-seconds 10] [--root-ca-file CA]
                   [--cluster-signing-cert-file CA --cluster-signing-key-file KEY]
                   [--node-monitor-period 5] [--node-monitor-grace-period 50]
                   [--node-eviction-rate 0.1] [--secondary-node-eviction-rate 0.01]
                   [--unhealthy-zone-threshold 0.55] [--large-cluster-size-threshold 50]
                   [--terminated-pod-gc-threshold 12500] [--konnectivity-uds-name PATH]
                   [-v]

``watchcache lab`` runs it in its own process after seeding (``--no-sim`` switches it
off); ``watchcache sim`` runs it alone against any server. ``--no-controllers`` keeps
only the node agents (kubelets), their Events and the churn: the real
kube-controller-manager and kube-scheduler then do what the scheduler and controllers
here would (docs/conformance.md). The controllers share their informers as
kube-controller-manager's do: one nodes, pods, ReplicaSets, Deployments, Jobs,
namespaces, PodDisruptionBudgets, Services, EndpointSlices and CSRs informer for the
control plane (the node agents each watch only their own node's pods).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.sim.agnhost import AgnhostServers
from lab.sim.certificate_signer import CSRSigningController
from lab.sim.churn import Churn
from lab.sim.client import Client
from lab.sim.containers import Runtime
from lab.sim.deployment import DeploymentController
from lab.sim.disruption import DisruptionController
from lab.sim.endpointslice import EndpointSliceController
from lab.sim.events import EventBroadcaster
from lab.sim.garbage_collector import GarbageCollector
from lab.sim.informer import Informer
from lab.sim.job import JobController
from lab.sim.konnectivity import KonnectivityServer
from lab.sim.namespace_controller import NamespaceController
from lab.sim.node_agent import RENEW_SECONDS, STATUS_SECONDS, NodeAgents
from lab.sim.node_lifecycle import GRACE_PERIOD, MONITOR_PERIOD, NodeLifecycleController
from lab.sim.podgc import TERMINATED_THRESHOLD, PodGC
from lab.sim.replicaset import ReplicaSetController
from lab.sim.scheduler import Scheduler
from lab.sim.serviceaccounts import RootCACertPublisher, ServiceAccountsController
from lab.sim.zone_eviction import EvictionRates
from proxy.server.certs import CertKey

__all__ = ["DEFAULT_CHURN", "Simulation", "main"]

log = logging.getLogger("watchcache.sim")

DEFAULT_CHURN = 1.0  # container restarts per second, cluster-wide


@dataclass
class Simulation:
    """Everything the simulated cluster runs against ``server``; ``start`` spawns it as
    tasks of the running loop, ``stop`` cancels and awaits them and closes the clients."""

    server: str
    churn: float = DEFAULT_CHURN
    renew_seconds: float = RENEW_SECONDS
    status_seconds: float = STATUS_SECONDS
    # the cluster's root CA (PEM) the root CA publisher puts in every namespace's
    # kube-root-ca.crt ConfigMap (kube-controller-manager's --root-ca-file), and the CA
    # the kubelets authenticate the API server's client certificate with (their
    # --client-ca-file); "": none published, no kubelet API served
    root_ca: str = ""
    # the CA the CSR signer issues certificates from (kube-controller-manager's
    # --cluster-signing-cert-file/--cluster-signing-key-file); None: no signer
    cluster_signing: CertKey | None = None
    node_monitor_period: float = MONITOR_PERIOD
    node_monitor_grace_period: float = GRACE_PERIOD
    # the node lifecycle controller's NoExecute tainting rates per zone
    eviction_rates: EvictionRates = field(default_factory=EvictionRates)
    # terminated pods kept before the pod GC deletes the oldest (0: all kept)
    terminated_pod_gc_threshold: int = TERMINATED_THRESHOLD
    # False: node agents, Events and churn only (a real control plane runs the rest)
    controllers: bool = True
    # the UNIX socket of the API server's cluster egress (HTTP CONNECT to pod IPs,
    # konnectivity-server's --uds-name); "": none
    konnectivity_uds: str = ""
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _clients: list[Client] = field(default_factory=list)

    def start(self) -> None:
        informers = Client(self.server, "controller-manager")
        self._clients.append(informers)
        core, apps = informers.core, informers.apps
        self.nodes = Informer(informers, core.list_node, name="nodes")
        self.pods = Informer(informers, core.list_pod_for_all_namespaces, name="pods")
        self.replicasets = Informer(informers, apps.list_replica_set_for_all_namespaces,
                                    name="replicasets")  # fmt: skip
        self.deployments = Informer(informers, apps.list_deployment_for_all_namespaces,
                                    name="deployments")  # fmt: skip
        self.jobs = Informer(informers, informers.batch.list_job_for_all_namespaces,
                             name="jobs")  # fmt: skip
        self.namespaces = Informer(informers, core.list_namespace, name="namespaces")
        self.budgets = Informer(informers,
                                informers.policy.list_pod_disruption_budget_for_all_namespaces,
                                name="poddisruptionbudgets")  # fmt: skip
        self.csrs = Informer(informers, informers.certificates.list_certificate_signing_request,
                             name="certificatesigningrequests")  # fmt: skip
        self.events = events = EventBroadcaster(self.server)
        self.agents = NodeAgents(self.server, self.nodes, events, client_ca=self.root_ca,
                                 renew_seconds=self.renew_seconds,
                                 status_seconds=self.status_seconds)  # fmt: skip
        self.churner = Churn(self.agents, self.churn)
        # handlers first, then the informers: every controller sees every first ADDED
        # the agnhost webhook servers upstream's e2e suite deploys read their certificate
        # from the pod's mounted Secret, as the node runtime builds a container's files
        agnhost = AgnhostServers(Runtime(informers).filesystem)
        self.konnectivity = (KonnectivityServer(self.konnectivity_uds, self.pods.items,
                                                self.nodes.items, agnhost)
                             if self.konnectivity_uds else None)  # fmt: skip
        egress = [self.konnectivity.run()] if self.konnectivity else []
        runs = [events.run(), self.agents.run(), *self._control_plane(), *egress,
                self.churner.run(), self.nodes.run(), self.pods.run()]  # fmt: skip
        self._tasks = [asyncio.create_task(_logged(c), name="sim") for c in runs]

    def _control_plane(self) -> list[Coroutine[Any, Any, None]]:
        """The scheduler and the controllers with their own informers' runs (none
        without ``controllers``)."""
        self.scheduler: Scheduler | None = None
        if not self.controllers:
            return []
        events = self.events
        self.scheduler = Scheduler(self.server, self.nodes, events)
        self.replicaset_controller = ReplicaSetController(self.server, self.replicasets,
                                                          self.pods, events)  # fmt: skip
        self.deployment_controller = DeploymentController(self.server, self.deployments,
                                                          self.replicasets, events)  # fmt: skip
        self.job_controller = JobController(self.server, self.jobs, self.pods, events)
        self.garbage_collector = GarbageCollector(self.server, self.pods, self.replicasets,
                                                  self.deployments, self.jobs,
                                                  events)  # fmt: skip
        self.namespace_controller = NamespaceController(self.server, self.namespaces)
        self.serviceaccounts_controller = ServiceAccountsController(self.server,
                                                                    self.namespaces)  # fmt: skip
        self.disruption_controller = DisruptionController(
            self.server, self.budgets, self.pods, self.replicasets, self.deployments, events)
        self.node_lifecycle_controller = NodeLifecycleController(
            self.server, self.nodes, self.pods, events, monitor_period=self.node_monitor_period,
            grace_period=self.node_monitor_grace_period, rates=self.eviction_rates)  # fmt: skip
        client = self._clients[0]
        services = Informer(client, client.core.list_service_for_all_namespaces,
                            name="services")  # fmt: skip
        slices = Informer(client, client.discovery.list_endpoint_slice_for_all_namespaces,
                          name="endpointslices")  # fmt: skip
        self.endpointslice_controller = EndpointSliceController(self.server, services, slices,
                                                                self.pods)  # fmt: skip
        self.pod_gc = PodGC(self.server, self.pods, self.nodes,
                            threshold=self.terminated_pod_gc_threshold)  # fmt: skip
        signer = ([CSRSigningController(self.server, self.csrs, self.cluster_signing).run(),
                   self.csrs.run()] if self.cluster_signing else [])  # fmt: skip
        publisher = ([RootCACertPublisher(self.server, self.namespaces, self.root_ca).run()]
                     if self.root_ca else [])  # fmt: skip
        return [self.scheduler.run(), self.replicaset_controller.run(),
                self.deployment_controller.run(), self.job_controller.run(),
                self.garbage_collector.run(), self.namespace_controller.run(),
                self.serviceaccounts_controller.run(), *publisher, self.namespaces.run(),
                self.disruption_controller.run(), self.node_lifecycle_controller.run(),
                self.endpointslice_controller.run(), self.pod_gc.run(), *signer,
                self.budgets.run(),
                services.run(), slices.run(),
                self.replicasets.run(), self.deployments.run(), self.jobs.run()]  # fmt: skip

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for client in self._clients:
            await client.close()

    def summary(self) -> str:
        """One line: what the simulation has done so far."""
        renewals = sum(a.renewals for a in self.agents.agents.values())
        return (f"{len(self.agents.agents)} node agents ({renewals} lease renewals), "
                f"{self.scheduler.bindings if self.scheduler else 0} pods bound by the "
                f"simulated scheduler, {self.churner.changes} container "
                f"restarts, {self.events.written} event writes ({self.events.dropped} "
                "events dropped)")  # fmt: skip


async def _logged(coro: Coroutine[Any, Any, None]) -> None:
    """Run one part of the simulation; a crash is logged, not silently dropped."""
    try:
        await coro
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("simulation task failed")
        raise


async def _run(a: argparse.Namespace, root_ca: str, signing: CertKey | None) -> int:
    sim = Simulation(a.server, churn=a.churn, renew_seconds=a.renew_seconds, root_ca=root_ca,
                     cluster_signing=signing, node_monitor_period=a.node_monitor_period,
                     node_monitor_grace_period=a.node_monitor_grace_period,
                     controllers=a.controllers,
                     terminated_pod_gc_threshold=a.terminated_pod_gc_threshold,
                     eviction_rates=EvictionRates(a.node_eviction_rate,
                                                  a.secondary_node_eviction_rate,
                                                  a.unhealthy_zone_threshold,
                                                  a.large_cluster_size_threshold),
                     konnectivity_uds=a.konnectivity_uds_name)  # fmt: skip
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    sim.start()
    print(f"simulating a cluster against {a.server} (churn {a.churn}/s)", flush=True)
    try:
        await stop.wait()
    finally:
        await sim.stop()
    print(sim.summary(), flush=True)
    return 0


def add_sim_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--churn", type=float, default=DEFAULT_CHURN, metavar="RATE",
                   help="container restarts per second across the cluster "
                   f"(default {DEFAULT_CHURN}; 0: none)")  # fmt: skip
    p.add_argument("--renew-seconds", type=float, default=RENEW_SECONDS,
                   help=f"node Lease renew interval (default {RENEW_SECONDS:.0f})")  # fmt: skip
    p.add_argument("--no-controllers", dest="controllers", action="store_false",
                   help="node agents (kubelets) only: no simulated scheduler or controllers, "
                   "for a real kube-controller-manager and kube-scheduler")  # fmt: skip


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="watchcache sim", description=__doc__.split("\n\n")[0])
    p.add_argument("--server", required=True, help="the API server's URL")
    add_sim_arguments(p)
    p.add_argument("--cluster-signing-cert-file", default="",
                   help="the CA (PEM) that issues the certificates of approved CSRs")
    p.add_argument("--cluster-signing-key-file", default="", help="that CA's key (PEM)")
    p.add_argument("--node-monitor-period", type=float, default=MONITOR_PERIOD,
                   help=f"how often node health is checked (default {MONITOR_PERIOD:.0f} s)")
    p.add_argument("--node-monitor-grace-period", type=float, default=GRACE_PERIOD,
                   help="how long a node may stay silent before it is NotReady "
                   f"(default {GRACE_PERIOD:.0f} s)")  # fmt: skip
    p.add_argument("--root-ca-file", default="",
                   help="the cluster's root CA (PEM), published in every namespace as the "
                   "kube-root-ca.crt ConfigMap and trusted by the node agents' kubelet API "
                   "for the API server's client certificate (default: neither)")  # fmt: skip
    rates = EvictionRates()
    p.add_argument("--node-eviction-rate", type=float, default=rates.rate,
                   help="nodes per second tainted NoExecute in a healthy zone "
                   f"(default {rates.rate})")  # fmt: skip
    p.add_argument("--secondary-node-eviction-rate", type=float, default=rates.secondary_rate,
                   help="the same in a partially disrupted large zone "
                   f"(default {rates.secondary_rate})")  # fmt: skip
    p.add_argument("--unhealthy-zone-threshold", type=float,
                   default=rates.unhealthy_zone_threshold,
                   help="the share of a zone's nodes not Ready (at least 3) that makes it "
                   f"partially disrupted (default {rates.unhealthy_zone_threshold})")  # fmt: skip
    p.add_argument("--large-cluster-size-threshold", type=int,
                   default=rates.large_cluster_size_threshold,
                   help="zones of more nodes get the secondary rate when partially "
                   f"disrupted, smaller ones none (default "
                   f"{rates.large_cluster_size_threshold})")  # fmt: skip
    p.add_argument("--terminated-pod-gc-threshold", type=int, default=TERMINATED_THRESHOLD,
                   help="terminated pods kept before the pod garbage collector deletes the "
                   f"oldest (default {TERMINATED_THRESHOLD}; 0: none deleted)")  # fmt: skip
    p.add_argument("--konnectivity-uds-name", default="", metavar="PATH",
                   help="serve the API server's cluster egress (HTTP CONNECT to the "
                   "simulated pods' IPs, as konnectivity-server --mode=http-connect) on "
                   "this UNIX socket, for its --egress-selector-config-file "
                   "(default: none)")  # fmt: skip
    p.add_argument("-v", "--verbose", action="store_true", help="log every retry")
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO if a.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")  # fmt: skip
    root_ca = Path(a.root_ca_file).read_text() if a.root_ca_file else ""
    signing = None
    if a.cluster_signing_cert_file and a.cluster_signing_key_file:
        signing = CertKey(Path(a.cluster_signing_cert_file).read_bytes(),
                          Path(a.cluster_signing_key_file).read_bytes())  # fmt: skip
    return asyncio.run(_run(a, root_ca, signing))
