"""Defaulting of the apps and batch kinds, table-driven: each expected object is what
kube-apiserver 1.37 returns for what ``kubectl create`` sends, derived from the
upstream function each case names (``pkg/apis/apps/v1/defaults.go``,
``pkg/apis/batch/v1/defaults.go``); pod templates get the PodSpec defaults only."""

from __future__ import annotations

import pytest

from tests.unit.proxy.kube.defaulting.cases import Case, defaulted_template, template

_SELECTOR = {"matchLabels": {"app": "web"}}
_META = {"name": "web", "labels": {"app": "web"}}

CASES = [
    Case("deployment: kubectl create deployment", "apps", "v1", "Deployment",
         {"metadata": _META, "spec": {"selector": _SELECTOR, "template": template()}},
         {"metadata": _META, "spec": {
             "selector": _SELECTOR, "template": defaulted_template(), "replicas": 1,
             "strategy": {"type": "RollingUpdate",
                          "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
             "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600}},
         "SetDefaults_Deployment"),
    Case("deployment: RollingUpdate without rollingUpdate (the controller's nil maxSurge)",
         "apps", "v1", "Deployment",
         {"metadata": _META, "spec": {"replicas": 3, "strategy": {"type": "RollingUpdate"},
                                      "selector": _SELECTOR, "template": template()}},
         {"metadata": _META, "spec": {
             "replicas": 3, "selector": _SELECTOR, "template": defaulted_template(),
             "strategy": {"type": "RollingUpdate",
                          "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
             "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600}},
         "SetDefaults_Deployment"),
    Case("deployment: Recreate gets no rollingUpdate", "apps", "v1", "Deployment",
         {"metadata": _META, "spec": {"strategy": {"type": "Recreate"},
                                      "revisionHistoryLimit": 0,
                                      "selector": _SELECTOR, "template": template()}},
         {"metadata": _META, "spec": {
             "strategy": {"type": "Recreate"}, "revisionHistoryLimit": 0, "replicas": 1,
             "selector": _SELECTOR, "template": defaulted_template(),
             "progressDeadlineSeconds": 600}},
         "SetDefaults_Deployment"),
    Case("replicaset", "apps", "v1", "ReplicaSet",
         {"metadata": _META, "spec": {"selector": _SELECTOR, "template": template("a:1")}},
         {"metadata": _META, "spec": {"selector": _SELECTOR, "replicas": 1,
                                      "template": defaulted_template("a:1", "IfNotPresent")}},
         "SetDefaults_ReplicaSet"),
    Case("daemonset", "apps", "v1", "DaemonSet",
         {"metadata": _META, "spec": {"selector": _SELECTOR, "template": template()}},
         {"metadata": _META, "spec": {
             "selector": _SELECTOR, "template": defaulted_template(),
             "updateStrategy": {"type": "RollingUpdate",
                                "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
             "revisionHistoryLimit": 10}},
         "SetDefaults_DaemonSet"),
    Case("statefulset", "apps", "v1", "StatefulSet",
         {"metadata": _META, "spec": {
             "selector": _SELECTOR, "serviceName": "web", "template": template(),
             "volumeClaimTemplates": [{"metadata": {"name": "data"},
                                       "spec": {"accessModes": ["ReadWriteOnce"]}}]}},
         {"metadata": _META, "spec": {
             "selector": _SELECTOR, "serviceName": "web", "template": defaulted_template(),
             "volumeClaimTemplates": [{"metadata": {"name": "data"},
                                       "spec": {"accessModes": ["ReadWriteOnce"],
                                                "volumeMode": "Filesystem"},
                                       "status": {"phase": "Pending"}}],
             "podManagementPolicy": "OrderedReady",
             "updateStrategy": {"type": "RollingUpdate",
                                "rollingUpdate": {"partition": 0, "maxUnavailable": 1}},
             "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain",
                                                      "whenScaled": "Retain"},
             "replicas": 1, "revisionHistoryLimit": 10}},
         "SetDefaults_StatefulSet (MaxUnavailableStatefulSet on, as 1.35+)"),
    Case("statefulset: OnDelete", "apps", "v1", "StatefulSet",
         {"metadata": _META, "spec": {"updateStrategy": {"type": "OnDelete"},
                                      "selector": _SELECTOR, "template": template()}},
         {"metadata": _META, "spec": {
             "updateStrategy": {"type": "OnDelete"}, "selector": _SELECTOR,
             "template": defaulted_template(), "podManagementPolicy": "OrderedReady",
             "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain",
                                                      "whenScaled": "Retain"},
             "replicas": 1, "revisionHistoryLimit": 10}},
         "SetDefaults_StatefulSet"),
    Case("job: kubectl create job", "batch", "v1", "Job",
         {"metadata": {"name": "j"}, "spec": {"template": {
             "metadata": {"labels": {"run": "j"}},
             "spec": {"containers": [{"name": "c", "image": "busybox"}],
                      "restartPolicy": "Never"}}}},
         {"metadata": {"name": "j", "labels": {"run": "j"}}, "spec": {
             "completions": 1, "parallelism": 1, "backoffLimit": 6,
             "completionMode": "NonIndexed", "suspend": False,
             "podReplacementPolicy": "TerminatingOrFailed",
             "template": {"metadata": {"labels": {"run": "j"}}, "spec": {
                 **defaulted_template("busybox")["spec"], "restartPolicy": "Never"}}}},
         "SetDefaults_Job"),
    Case("job: per-index backoff, pod failure policy", "batch", "v1", "Job",
         {"metadata": {"name": "j"}, "spec": {
             "parallelism": 2, "backoffLimitPerIndex": 1, "completionMode": "Indexed",
             "completions": 4,
             "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [
                 {"type": "DisruptionTarget"}]}]}}},
         {"metadata": {"name": "j"}, "spec": {
             "parallelism": 2, "backoffLimitPerIndex": 1, "completionMode": "Indexed",
             "completions": 4, "backoffLimit": 2147483647, "suspend": False,
             "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [
                 {"type": "DisruptionTarget", "status": "True"}]}]},
             "podReplacementPolicy": "Failed"}},
         "SetDefaults_Job"),
    Case("cronjob", "batch", "v1", "CronJob",
         {"metadata": {"name": "c"}, "spec": {"schedule": "* * * * *", "jobTemplate": {
             "spec": {"template": template("busybox")}}}},
         {"metadata": {"name": "c"}, "spec": {
             "schedule": "* * * * *", "concurrencyPolicy": "Allow", "suspend": False,
             "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
             "jobTemplate": {"spec": {"template": defaulted_template("busybox")}}}},
         "SetDefaults_CronJob (its job template is not a Job: no SetDefaults_Job)"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_workload_defaults(case: Case) -> None:
    assert case.run() == case.want, case.source
