"""batch group rows: jobs and cronjobs."""

from __future__ import annotations

from tests.unit.proxy.printers.support import TEMPLATE, ago, cells
from tests.unit.proxy.resources import Res


def test_job_rows() -> None:
    jobs = Res("batch", "v1", "Job", "jobs")
    job = {
        "metadata": {"name": "j", "creationTimestamp": ago(minutes=3)},
        "spec": {
            "completions": 2,
            "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
        },
        "status": {
            "succeeded": 2,
            "startTime": ago(minutes=3),
            "completionTime": ago(minutes=1),
            "conditions": [{"type": "Complete", "status": "True"}],
        },
    }
    assert cells(jobs, job) == ["j", "Complete", "2/2", "2m", "3m", "c", "busybox", "<none>"]
    running = {
        "metadata": {"name": "k"},
        "spec": {"parallelism": 3},
        "status": {"startTime": ago(seconds=40)},
    }
    assert cells(jobs, running)[1:4] == ["Running", "0/1 of 3", "40s"]


def test_cronjob_row() -> None:
    cj = {
        "metadata": {"name": "nightly", "creationTimestamp": ago(days=3)},
        "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": TEMPLATE}}},
        "status": {"active": [{"name": "j1"}], "lastScheduleTime": ago(hours=9)},
    }
    assert cells(Res("batch", "v1", "CronJob", "cronjobs"), cj) == [
        "nightly", "0 3 * * *", "<none>", "False", 1, "9h", "3d", "c", "img", "<none>",
    ]  # fmt: skip
