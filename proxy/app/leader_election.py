"""The run-once controllers' leader election among ``--workers`` N > 1 serving
processes (upstream: kube-controller-manager's ``--leader-elect`` over a Lease): each
worker is a candidate for the Lease ``CONTROLLERS_LEASE``, and only its holder runs the
controllers that must run once per cluster (``PostStartHooks.leads``).

The election is a post-start hook that starts after kube-system exists (the Lease lives
there); without system namespaces (``--system-namespaces=false``) there is no election
and every worker runs every controller, as replicas without one would.
"""

from __future__ import annotations

from proxy.kube.bootstrap.system_namespaces import SYSTEM_NAMESPACES_HOOK
from proxy.leaderelection.leader_election import LeaderElectionConfig, LeaderElector
from proxy.leaderelection.lease_lock import LeaseLock
from proxy.server.post_start_hooks import PostStartHookContext, PostStartHooks
from proxy.server.settings import ConfigError, Settings
from proxy.server.worker import CONTROLLERS_LEASE, WorkerIdentity

__all__ = ["LEADER_ELECTION_HOOK", "add_leader_election", "worker_elector"]

# the post-start hook of a worker's leader election (``--workers`` N > 1)
LEADER_ELECTION_HOOK = "leader-election"


def worker_elector(
    settings: Settings, worker: WorkerIdentity | None, instance: str
) -> LeaderElector | None:
    """This process's candidate for the Lease, when it is one of several workers and
    the Lease's namespace exists (None: it runs every controller itself)."""
    if worker is None or worker.count <= 1 or not settings.system_namespaces:
        return None
    try:
        config = LeaderElectionConfig(
            LeaseLock(*CONTROLLERS_LEASE),
            worker.lease_identity(instance),
            lease_duration=settings.leader_elect_lease_duration,
            renew_deadline=settings.leader_elect_renew_deadline,
            retry_period=settings.leader_elect_retry_period,
        )
    except ValueError as e:
        raise ConfigError(f"--leader-elect-*: {e}") from None
    return LeaderElector(config)


def add_leader_election(hooks: PostStartHooks, elector: LeaderElector, settings: Settings) -> None:
    """The election as a hook: after kube-system exists (the Lease lives there)."""

    async def elect(hook: PostStartHookContext) -> None:
        await elector.run(hook.loopback)

    after = (SYSTEM_NAMESPACES_HOOK,) if settings.system_namespaces else ()
    hooks.add(LEADER_ELECTION_HOOK, elect, after=after, ready=lambda: True)
