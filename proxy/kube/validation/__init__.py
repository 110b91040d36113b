"""Validation of kube's built-in kinds (``k8s.io/kubernetes/pkg/apis/<group>/validation``):
Pod (``pod``, containers in ``container``), other core kinds (``core``), ``apps``,
``batch`` (CronJob schedules in ``cron``), ``event``, ``admissionregistration``; and
``strategies``, the table the composition root registers with the generic registry.

The generic pieces they build on (field errors, names, ObjectMeta, quantities) are in
``proxy.apimachinery``.
"""
