"""The Job controller: runs each Job's pods until enough of them succeed, or too many fail.

It watches Jobs and pods (shared informers) and, for each Job that has not finished,
counts the pods it controls (ownerReference ``controller: true`` with its uid): active
(neither terminal nor being deleted), Succeeded, Failed. Then, as upstream's
``syncJob`` in its essentials:

- **success**: ``spec.completions`` pods Succeeded (or, with completions unset and
  parallelism set, the work-queue mode: one Succeeded and none active). The
  ``SuccessCriteriaMet`` condition comes first (as 1.31+ writes it), remaining active
  pods are deleted, and once none is left running ``Complete`` (reason
  ``CompletionsReached``) and ``status.completionTime``;
- **failure**: more Failed pods than ``spec.backoffLimit`` (6 by default; with
  restartPolicy ``OnFailure``, container restarts of the active pods count instead):
  ``FailureTarget``, active pods deleted, then ``Failed`` (reason ``BackoffLimitExceeded``);
- **suspend** (``spec.suspend: true``): active pods deleted, the ``Suspended`` condition;
  on resume the condition turns False (``JobResumed``) and ``status.startTime`` restarts;
- otherwise it keeps ``min(parallelism, completions - succeeded)`` pods active
  (completions and parallelism default to 1): it creates the missing ones from
  ``spec.template`` (``generateName: <job>-``, the template's labels, which the server
  gave the job-name/controller-uid labels, and a controller ownerReference that blocks
  the Job's foreground deletion) and deletes a surplus (parallelism lowered). After a
  failure, a replacement waits for a backoff that doubles with every failed pod
  (upstream: 10 s up to 6 min; here 1 s up to 30 s, a lab is quicker).

It writes ``status`` (active, ready, terminating, succeeded, failed, startTime,
completionTime, conditions, ``uncountedTerminatedPods: {}``) when it changed. Like the
ReplicaSet controller it waits for its informer to show the pods it created or deleted
before counting again. Deliberate differences: it counts the pods that exist (upstream
tracks finished pods with the ``batch.kubernetes.io/job-tracking`` finalizer, so a
deleted finished pod stays counted); Indexed completion mode, podFailurePolicy,
successPolicy, activeDeadlineSeconds and backoffLimitPerIndex are not implemented.
"""

from __future__ import annotations

import contextlib
import datetime as dt

from lab.sim import pod_status
from lab.sim.client import JSON, APIError, Client
from lab.sim.events import EventBroadcaster, object_reference
from lab.sim.informer import Informer, WorkQueue, key_of, run_workers
from lab.sim.owners import ControllerIndex, controller_of
from lab.sim.pod_control import Expectations, PodControl
from lab.sim.replicaset import active, ready

__all__ = ["JobController", "condition_true", "finished", "job_outcome"]

BACKOFF_LIMIT = 6  # the API's default for spec.backoffLimit
BACKOFF_BASE = 1.0
BACKOFF_MAX = 30.0
BURST = 50
COMPLETIONS_REACHED = ("CompletionsReached", "Reached expected number of succeeded pods")
BACKOFF_EXCEEDED = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")

# (the interim condition, the final one, their reason and message)
Outcome = tuple[str, str, tuple[str, str]]


def condition_true(job: JSON, kind: str) -> bool:
    conditions = (job.get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


def finished(job: JSON) -> bool:
    """Complete or Failed: the controller leaves the Job alone from then on."""
    return condition_true(job, "Complete") or condition_true(job, "Failed")


def _phase(pod: JSON) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def _with_condition(conditions: list[JSON], kind: str, status: str, why: tuple[str, str]
                    ) -> list[JSON]:  # fmt: skip
    """``conditions`` with ``kind`` set to ``status`` (appended, or changed in place;
    an unchanged condition keeps its times)."""
    stamp = pod_status.now()
    new = {"type": kind, "status": status, "lastProbeTime": stamp,
           "lastTransitionTime": stamp, "reason": why[0], "message": why[1]}  # fmt: skip
    out = [dict(c) for c in conditions]
    for i, c in enumerate(out):
        if c.get("type") == kind:
            if c.get("status") != status:
                out[i] = new
            return out
    return [*out, new]


def _restarts(pods: list[JSON]) -> int:
    return sum(int(c.get("restartCount") or 0) for p in pods
               for c in (p.get("status") or {}).get("containerStatuses") or [])  # fmt: skip


def _last_failure(pods: list[JSON]) -> float:
    """When the last Failed pod's containers finished (epoch seconds; 0 if unknown)."""
    last = 0.0
    for p in pods:
        for c in (p.get("status") or {}).get("containerStatuses") or []:
            at = ((c.get("state") or {}).get("terminated") or {}).get("finishedAt")
            if at:
                stamp = dt.datetime.strptime(at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
                last = max(last, stamp.timestamp())
    return last


def job_outcome(job: JSON, running: list[JSON], failed: int, succeeded: int
                ) -> Outcome | None:  # fmt: skip
    """(interim condition, final condition, reason and message) once ``job`` has
    succeeded or failed, given its active pods (``running``) and how many of its pods
    failed and succeeded; None while it runs."""
    spec = job.get("spec") or {}
    completions = _completions(spec)
    if condition_true(job, "SuccessCriteriaMet") or (
        succeeded >= completions if completions is not None
        else succeeded > 0 and not running):  # fmt: skip
        return "SuccessCriteriaMet", "Complete", COMPLETIONS_REACHED
    limit = int(spec.get("backoffLimit", BACKOFF_LIMIT))
    on_failure = ((spec.get("template") or {}).get("spec") or {}).get(
        "restartPolicy") == "OnFailure"  # fmt: skip
    restarts = _restarts(running) if on_failure else 0
    if (condition_true(job, "FailureTarget") or failed > limit
            or (restarts > 0 and restarts >= max(limit, 1))):  # fmt: skip
        return "FailureTarget", "Failed", BACKOFF_EXCEEDED
    return None


class JobController:
    """Reconciles every Job ``jobs`` reports against ``pods``."""

    def __init__(
        self, server: str, jobs: Informer, pods: Informer, events: EventBroadcaster
    ) -> None:
        self.client = Client(server, "job-controller")
        self.recorder = events.recorder("job-controller")
        self.jobs = jobs
        self.pods = pods
        self.owned = ControllerIndex(pods, "Job")
        self.expectations = Expectations()
        self.pod_control = PodControl(self.client, self.expectations, self.recorder)
        self.queue: WorkQueue[str] = WorkQueue()
        # uid -> the outcome decided, so that a Job the informer shows stale (before
        # its new conditions) is not started again once its pods are deleted
        self.outcomes: dict[str, Outcome] = {}

    async def run(self) -> None:
        self.jobs.add_handler(self._on_job)
        self.pods.add_handler(self._on_pod)
        try:
            await run_workers("job-controller", self.queue, self.sync, 4)
        finally:
            await self.client.close()

    def _on_job(self, kind: str, job: JSON, old: JSON | None) -> None:
        if kind == "DELETED":
            uid = str((job.get("metadata") or {}).get("uid"))
            self.outcomes.pop(uid, None)
            self.expectations.forget(uid)
        self.queue.add(key_of(job))

    def _on_pod(self, kind: str, pod: JSON, old: JSON | None) -> None:
        ref = controller_of(pod, "Job")
        if ref is None:
            return
        self.expectations.observe_pod(str(ref["uid"]), kind, pod, old)
        self.queue.add(f"{(pod.get('metadata') or {}).get('namespace')}/{ref['name']}")

    async def sync(self, key: str) -> None:
        job = self.jobs.get(key)
        if job is None or finished(job):
            return
        uid = str(job["metadata"]["uid"])
        pods = self.owned.dependents(uid)
        running = [p for p in pods if active(p)]
        failed = [p for p in pods if _phase(p) == "Failed"]
        succeeded = sum(1 for p in pods if _phase(p) == "Succeeded")
        spec, status = job.get("spec") or {}, dict(job.get("status") or {})
        conditions: list[JSON] = list(status.get("conditions") or [])
        terminating = _terminating(pods)
        outcome = self.outcomes.get(uid) or job_outcome(job, running, len(failed), succeeded)
        if outcome is not None:
            self.outcomes[uid] = outcome
            first, last, why = outcome
            conditions = _with_condition(conditions, first, "True", why)
            terminating += running  # deleted gracefully: their kubelets finish them
            running = await self._delete(job, running)
            if not running and not terminating:
                conditions = _with_condition(conditions, last, "True", why)
                if last == "Complete":
                    status["completionTime"] = pod_status.now()
                self._finished_event(job, last, why)
        elif spec.get("suspend"):
            terminating += running
            running = await self._delete(job, running)
            conditions = _with_condition(conditions, "Suspended", "True",
                                         ("JobSuspended", "Job suspended"))  # fmt: skip
        else:
            if condition_true(job, "Suspended"):
                conditions = _with_condition(conditions, "Suspended", "False",
                                             ("JobResumed", "Job resumed"))  # fmt: skip
                status.pop("startTime", None)
            status.setdefault("startTime", pod_status.now())
            running = await self._manage(job, running, failed, succeeded)
        status.update(active=len(running), ready=sum(1 for p in running if ready(p)),
                      terminating=len(terminating), succeeded=succeeded,
                      failed=len(failed), conditions=conditions,
                      uncountedTerminatedPods={})  # fmt: skip
        await self._update_status(job, status)

    async def _manage(self, job: JSON, running: list[JSON], failed: list[JSON],
                      succeeded: int) -> list[JSON]:  # fmt: skip
        """Create or delete pods towards the wanted number of active ones; the active
        pods as they will be (a created pod counts before the informer shows it)."""
        uid = str(job["metadata"]["uid"])
        if not self.expectations.satisfied(uid) or job["metadata"].get("deletionTimestamp"):
            return running
        spec = job.get("spec") or {}
        parallelism = int(spec.get("parallelism", 1))
        completions = _completions(spec)
        if completions is None:  # work queue: no new pods once one succeeded
            want = len(running) if succeeded else parallelism
        else:
            want = max(min(parallelism, completions - succeeded), 0)
        if len(running) > want:
            surplus = sorted(running, key=lambda p: (_phase(p) == "Running", ready(p)))
            return await self._delete(job, surplus[: len(running) - want]) + surplus[
                len(running) - want:]  # fmt: skip
        if len(running) == want:
            return running
        wait = self._backoff(failed)
        if wait > 0:
            self.queue.add_after(key_of(job), wait)
            return running
        typed = {"apiVersion": "batch/v1", "kind": "Job", **job}
        return running + await self.pod_control.create(typed, min(want - len(running), BURST))

    def _backoff(self, failed: list[JSON]) -> float:
        """Seconds before a failed pod may be replaced (0: now)."""
        if not failed:
            return 0.0
        delay = min(BACKOFF_BASE * float(2 ** (len(failed) - 1)), BACKOFF_MAX)
        now = dt.datetime.now(dt.UTC).timestamp()
        return max(_last_failure(failed) + delay - now, 0.0)

    async def _delete(self, job: JSON, victims: list[JSON]) -> list[JSON]:
        """Delete ``victims``; the active pods left among them: none."""
        if victims:
            await self.pod_control.delete({"apiVersion": "batch/v1", "kind": "Job", **job},
                                          victims)  # fmt: skip
        return []

    def _finished_event(self, job: JSON, last: str, why: tuple[str, str]) -> None:
        """The job controller's Event when a Job ends: ``Completed`` or its failure."""
        ref = object_reference(job, "Job", "batch/v1")
        if last == "Complete":
            self.recorder.event(ref, "Normal", "Completed", "Job completed")
        else:
            self.recorder.event(ref, "Warning", why[0], why[1])

    async def _update_status(self, job: JSON, status: JSON) -> None:
        old = job.get("status") or {}
        for k in ("active", "succeeded", "failed"):
            if not status.get(k):
                status.pop(k, None)  # omitempty, as upstream writes them
        if not status.get("conditions"):
            status.pop("conditions", None)
        if status == old:
            return
        body = {"apiVersion": "batch/v1", "kind": "Job", **job, "status": status}
        meta = job["metadata"]
        with contextlib.suppress(APIError):  # 409/404: the next event brings it again
            await self.client.call(self.client.batch.replace_namespaced_job_status,
                                   meta["name"], meta["namespace"], body)  # fmt: skip


def _completions(spec: JSON) -> int | None:
    """``spec.completions``; 1 when neither it nor parallelism is set (the API's
    default), None for the work-queue mode (parallelism alone)."""
    completions = spec.get("completions")
    if completions is None and spec.get("parallelism") is None:
        return 1
    return None if completions is None else int(completions)


def _terminating(pods: list[JSON]) -> list[JSON]:
    return [p for p in pods if (p.get("metadata") or {}).get("deletionTimestamp")
            and _phase(p) not in ("Succeeded", "Failed")]  # fmt: skip
