"""Post-start hooks (upstream's ``AddPostStartHook`` and ``RunPostStartHooks``): the
server's background work, declared by name, started once the server listens, each
supervised (``proxy.apimachinery.wait``) and each with its ``/readyz`` check
``poststarthook/<name>``.

A component declares what it runs at build time::

    hooks.add("rbac/bootstrap-roles", reconcile)            # a one-shot writer
    hooks.add("start-kube-aggregator-informers", lister.run, ready=lister.synced.is_set)
    hooks.add("apiservice-registration-controller", autoregister.run,
              after=("start-kube-aggregator-informers",))

and the composition root starts them all after the listeners are up, with the loopback
client (``proxy.loopback``) in the hook's context, as upstream hands each hook a
``PostStartHookContext`` with its ``LoopbackClientConfig``. The order of the ``add``
calls means nothing: a hook starts when every hook it names in ``after`` is up (an
informer synced, a bootstrap writer done), so "the registration controller needs the
APIService informer" is written where it is true, not in the order of lines in
``build_app``. A name is registered once; an unknown or cyclic ``after`` fails the
start, as a duplicate hook fails upstream's server construction.

With a leader elector (``elector``: the server runs as one of several workers over one
etcd, ``watchcache serve --workers N``), a hook added with ``elected=True`` runs only
while this process holds the Lease: it waits on standby, starts when leadership is
acquired and is cancelled when it is lost (then waits again). On standby its check
passes (the leader's does the work); controllers that must run everywhere but write only
once ask ``leads()`` before writing and ``on_leading`` to catch up when they take over.

A hook's check fails until it is up: a one-shot hook once it returned, a long-running
one (``ready`` given) once ``ready()`` holds; and again while it is down after a crash
(``[-]poststarthook/NAME failed: reason withheld``; the reason goes to the log).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from aiohttp import web

from proxy.apimachinery.wait import (
    LOOP_CLOCK,
    Backoff,
    Clock,
    SupervisedTask,
    cancel_and_wait,
)
from proxy.leaderelection.leader_election import LeaderElector
from proxy.loopback.client import LoopbackClient, is_transient

__all__ = ["POST_START_HOOKS", "PostStartHook", "PostStartHookContext", "PostStartHooks"]

log = logging.getLogger("watchcache.proxy")

# how often a hook waiting for the hooks it runs after looks at them again
DEPENDENCY_POLL_SECONDS = 0.05


@dataclass(frozen=True)
class PostStartHookContext:
    """What a hook is handed (upstream's ``PostStartHookContext``): the loopback client,
    whose writes go through the whole request pipeline as ``system:apiserver``."""

    loopback: LoopbackClient


HookFunc = Callable[[PostStartHookContext], Awaitable[None]]


@dataclass
class PostStartHook:
    name: str
    run: HookFunc
    after: tuple[str, ...] = ()
    ready: Callable[[], bool] | None = None
    elected: bool = False  # runs only while this process leads (see the module docstring)
    task: SupervisedTask | None = None
    # set once every hook in ``after`` was up and ``run`` was entered
    began: bool = False

    def up(self) -> bool:
        return self.task is not None and self.task.healthy()


@dataclass
class PostStartHooks:
    """The server's hooks, by name, in the order they were added (their checks')."""

    clock: Clock = LOOP_CLOCK
    backoff: Backoff = field(default_factory=Backoff)
    hooks: dict[str, PostStartHook] = field(default_factory=dict)
    started: bool = False
    # what the hooks were started with (None before): the loopback client for writers
    # that are not hooks (admission's quota status, written during a request)
    context: PostStartHookContext | None = None
    # the leader election of a server that is one of several workers; None: this
    # process alone runs every hook
    elector: LeaderElector | None = None

    def leads(self) -> bool:
        """Whether writes that must happen once happen here (always without an elector)."""
        return self.elector is None or self.elector.leading

    def on_leading(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` each time this process acquires the leadership."""
        if self.elector is not None:
            self.elector.on_change(lambda leading: callback() if leading else None)

    @property
    def loopback(self) -> LoopbackClient | None:
        return self.context.loopback if self.context is not None else None

    def add(
        self,
        name: str,
        run: HookFunc,
        *,
        after: tuple[str, ...] = (),
        ready: Callable[[], bool] | None = None,
        elected: bool = False,
    ) -> None:
        """Declare a hook (before ``start``); ``ready``: when a hook that never returns
        is up; without it, the hook is up once ``run`` returned. ``elected``: it runs
        only while leading, when there is an elector."""
        if self.started:
            raise RuntimeError(f"unable to add hook {name!r} because the hooks have started")
        if name in self.hooks:
            raise ValueError(f"unable to add hook {name!r} because it was already registered")
        self.hooks[name] = PostStartHook(name, run, tuple(after), ready, elected)

    def order(self) -> list[str]:
        """The names in an order where each comes after what it runs after;
        ValueError on an unknown name or a cycle."""
        done: list[str] = []
        visiting: set[str] = set()

        def visit(name: str, path: tuple[str, ...]) -> None:
            if name in done:
                return
            if name not in self.hooks:
                raise ValueError(f"post-start hook {path[-1]!r} runs after unknown {name!r}")
            if name in visiting:
                raise ValueError(f"post-start hooks run after each other: {' -> '.join(path)}")
            visiting.add(name)
            for dep in self.hooks[name].after:
                visit(dep, (*path, dep))
            visiting.discard(name)
            done.append(name)

        for name in self.hooks:
            visit(name, (name,))
        return done

    def start(self, context: PostStartHookContext) -> None:
        """Start every hook (each waits for those it runs after)."""
        order = self.order()
        self.started = True
        self.context = context
        for name in order:
            hook = self.hooks[name]
            hook.task = SupervisedTask(
                f"poststarthook/{name}",
                self._body(hook, context),
                ready=self._readiness(hook),
                backoff=self.backoff,
                clock=self.clock,
                quiet=is_transient,
            )
            hook.task.start()

    def _body(
        self, hook: PostStartHook, context: PostStartHookContext
    ) -> Callable[[], Awaitable[None]]:
        async def body() -> None:
            while not all(self.hooks[d].up() for d in hook.after):
                await self.clock.sleep(DEPENDENCY_POLL_SECONDS)
            hook.began = True
            if hook.elected and self.elector is not None:
                await self._while_leading(hook, context, self.elector)
            else:
                await hook.run(context)

        return body

    @staticmethod
    async def _while_leading(
        hook: PostStartHook, context: PostStartHookContext, elector: LeaderElector
    ) -> None:
        """Run ``hook`` each time leadership is acquired, cancelled when it is lost; a
        crash propagates (the supervisor restarts the whole loop)."""

        async def run() -> None:
            await hook.run(context)

        while True:
            await elector.wait_until(leading=True)
            work = asyncio.create_task(run(), name=f"elected/{hook.name}")
            lost = asyncio.create_task(elector.wait_until(leading=False))
            try:
                await asyncio.wait({work, lost}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                await cancel_and_wait(lost)
                if not work.done():
                    await cancel_and_wait(work)
            if not work.cancelled():
                work.result()  # a crash while leading
                await elector.wait_until(leading=False)  # one-shot: once per leadership

    def _readiness(self, hook: PostStartHook) -> Callable[[], bool]:
        def ready() -> bool:
            # a one-shot hook is up when done (the supervisor knows); a long-running
            # one when its own ``ready`` says so, never before it began; an elected one
            # on standby is up (the leader's does the work)
            if hook.elected and self.elector is not None and hook.began:
                return not self.elector.leading or hook.ready is None or hook.ready()
            return hook.began and hook.ready is not None and hook.ready()

        return ready

    async def stop(self) -> None:
        """Cancel every hook and wait for them, dependents first."""
        for name in reversed(list(self.hooks)):
            task = self.hooks[name].task
            if task is not None:
                await task.stop()

    def checks(self) -> list[tuple[str, Callable[[], None]]]:
        """``(poststarthook/NAME, check)`` per hook; a check raises while its hook is not
        up (before ``start`` too: upstream's checks fail until the hook ran)."""
        return [(f"poststarthook/{name}", self._check(hook)) for name, hook in self.hooks.items()]

    @staticmethod
    def _check(hook: PostStartHook) -> Callable[[], None]:
        def check() -> None:
            if hook.task is None:
                raise RuntimeError(f"{hook.name} has not started")
            hook.task.check()

        return check


# the app's hooks (healthz lists their checks; the composition root starts them)
POST_START_HOOKS = web.AppKey("watchcache_post_start_hooks", PostStartHooks)
