"""The simulated Job's pure parts: which pods end and how (the node agent), and when a
Job has succeeded or failed (the Job controller), OnFailure restarts included."""

from __future__ import annotations

from typing import Any

import pytest

from lab.sim import pod_status
from lab.sim.job import job_outcome
from lab.sim.node_agent import exit_code, run_seconds

JSON = dict[str, Any]


def _pod(annotations: JSON | None = None, owner: str = "", restarts: int = 0) -> JSON:
    refs = [{"kind": owner, "name": "o", "uid": "u", "controller": True}] if owner else []
    return {"metadata": {"uid": "p", "annotations": annotations or {}, "ownerReferences": refs},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": "c", "restartCount": restarts,
                 "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]}}  # fmt: skip


def _job(**spec: Any) -> JSON:
    return {"metadata": {"name": "j", "uid": "u"}, "spec": {"template": {"spec": {
        "restartPolicy": spec.pop("restartPolicy", "Never")}}, **spec}}  # fmt: skip


def test_only_a_jobs_pods_or_annotated_ones_end() -> None:
    assert run_seconds(_pod()) is None  # kubectl run: runs until deleted
    assert run_seconds(_pod(owner="ReplicaSet")) is None
    assert run_seconds(_pod(owner="Job")) == 1.0
    assert run_seconds(_pod({"lab.watchcache.io/run-seconds": "2.5"})) == 2.5
    assert exit_code(_pod(owner="Job")) == 0
    assert exit_code(_pod({"lab.watchcache.io/exit-code": "3"})) == 3


@pytest.mark.parametrize(("code", "phase", "reason"), [(0, "Succeeded", "Completed"),
                                                        (1, "Failed", "Error")])  # fmt: skip
def test_a_finished_pod_has_terminated_containers(code: int, phase: str, reason: str) -> None:
    status = pod_status.finished(_pod(owner="Job"), code)
    assert status["phase"] == phase
    (container,) = status["containerStatuses"]
    terminated = container["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (code, reason)
    assert terminated["startedAt"] == "2026-01-01T00:00:00Z" and not container["ready"]
    ready = {c["type"]: c for c in status["conditions"]}["Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "PodCompleted")


def test_success_needs_completions_or_one_of_a_work_queue() -> None:
    assert job_outcome(_job(), [], 0, 1) is not None  # completions and parallelism: 1
    assert job_outcome(_job(completions=3, parallelism=2), [_pod()], 0, 2) is None
    done = job_outcome(_job(completions=3, parallelism=2), [], 0, 3)
    assert done is not None and done[:2] == ("SuccessCriteriaMet", "Complete")
    assert job_outcome(_job(parallelism=2), [_pod()], 0, 1) is None  # the other still runs
    assert job_outcome(_job(parallelism=2), [], 0, 1) is not None


def test_failure_past_the_backoff_limit() -> None:
    assert job_outcome(_job(), [], 6, 0) is None  # backoffLimit 6 by default
    failed = job_outcome(_job(), [], 7, 0)
    assert failed is not None and failed[:2] == ("FailureTarget", "Failed")
    assert failed[2][0] == "BackoffLimitExceeded"
    assert job_outcome(_job(backoffLimit=0), [], 1, 0) is not None


def test_on_failure_container_restarts_count_against_the_limit() -> None:
    job = _job(backoffLimit=2, restartPolicy="OnFailure")
    assert job_outcome(job, [_pod(restarts=1)], 0, 0) is None
    assert job_outcome(job, [_pod(restarts=2)], 0, 0) is not None
    assert job_outcome(_job(backoffLimit=2), [_pod(restarts=5)], 0, 0) is None  # Never
