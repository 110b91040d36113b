"""PodSecurity admission (k8s.io/pod-security-admission/admission): the namespace's
``pod-security.kubernetes.io/{enforce,warn,audit}[-version]`` labels decide which Pod
Security Standard a pod must meet.

- Pods (create, and updates that change the spec): ``enforce`` violations are 403
  ``pods "p" is forbidden: violates PodSecurity "baseline:latest": <checks>``; else
  ``warn`` violations are a ``Warning: would violate PodSecurity "restricted:latest":
  ...``; ``audit`` violations the audit annotation ``pod-security.kubernetes.io/
  audit-violations``. ``pod-security.kubernetes.io/enforce-policy`` records the level.
- Workloads with a pod template (Deployments, Jobs, ...): warn and audit only.
- Namespaces: label values are validated (422 with upstream's words); changing the
  enforce level warns about existing pods that would violate it.
"""

from __future__ import annotations

import re
from typing import Any

from proxy import apierrors
from proxy.admission.attributes import CREATE, UPDATE, Attributes
from proxy.admission.interfaces import Plugin
from proxy.kube.admission.pod_security.checks import LEVELS, evaluate

__all__ = ["PodSecurity"]

JSON = dict[str, Any]
PREFIX = "pod-security.kubernetes.io/"
MODES = ("enforce", "warn", "audit")
_VERSION = re.compile(r"^(latest|v1\.(0|[1-9][0-9]*))$")

# (group, plural) -> path of the pod template in the object
_TEMPLATES: dict[tuple[str, str], tuple[str, ...]] = {
    ("apps", "deployments"): ("spec", "template"),
    ("apps", "replicasets"): ("spec", "template"),
    ("apps", "statefulsets"): ("spec", "template"),
    ("apps", "daemonsets"): ("spec", "template"),
    ("batch", "jobs"): ("spec", "template"),
    ("batch", "cronjobs"): ("spec", "jobTemplate", "spec", "template"),
    ("", "replicationcontrollers"): ("spec", "template"),
    ("", "podtemplates"): ("template",),
}


def _labels(obj: JSON | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


def policy(labels: dict[str, str], mode: str) -> tuple[str, str]:
    """(level, version) of one mode; privileged and latest by default."""
    level = labels.get(PREFIX + mode) or "privileged"
    version = labels.get(f"{PREFIX}{mode}-version") or "latest"
    return level, version


def describe(failures: list[tuple[str, str]]) -> str:
    return ", ".join(f"{title} ({detail})" if detail else title for title, detail in failures)


def _dig(obj: JSON, path: tuple[str, ...]) -> JSON | None:
    node: Any = obj
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


class PodSecurity(Plugin):
    name = "PodSecurity"
    operations = frozenset({CREATE, UPDATE})
    validating = True

    async def validate(self, attrs: Attributes) -> None:
        if attrs.subresource or attrs.object is None:
            return
        group, plural = attrs.resource.group, attrs.resource.plural
        if (group, plural) == ("", "namespaces"):
            await self._namespace(attrs)
        elif (group, plural) == ("", "pods"):
            if attrs.operation == UPDATE and attrs.old_object is not None and (
                    attrs.old_object.get("spec") == attrs.object.get("spec")):  # fmt: skip
                return
            await self._pod(attrs, attrs.object.get("metadata") or {},
                            attrs.object.get("spec") or {}, enforce=True)
        elif (group, plural) in _TEMPLATES:
            template = _dig(attrs.object, _TEMPLATES[(group, plural)])
            if template is not None:
                await self._pod(attrs, template.get("metadata") or {},
                                template.get("spec") or {}, enforce=False)

    async def _namespace_labels(self, namespace: str) -> dict[str, str]:
        ns = await self.lookup.get("", "namespaces", "", namespace)
        return _labels(ns)

    async def _pod(self, attrs: Attributes, meta: JSON, spec: JSON, *, enforce: bool) -> None:
        labels = await self._namespace_labels(attrs.namespace)
        level, version = policy(labels, "enforce")
        enforce_failures = evaluate(level, meta, spec)
        if enforce:
            attrs.add_annotation(PREFIX + "enforce-policy", f"{level}:{version}")
            if enforce_failures:
                raise apierrors.forbidden(
                    "pods", attrs.name,
                    f'violates PodSecurity "{level}:{version}": {describe(enforce_failures)}')
        audit_level, audit_version = policy(labels, "audit")
        audit_failures = evaluate(audit_level, meta, spec)
        if audit_failures:
            attrs.add_annotation(
                PREFIX + "audit-violations",
                f'would violate PodSecurity "{audit_level}:{audit_version}": '
                f"{describe(audit_failures)}")
        warn_level, warn_version = policy(labels, "warn")
        warn_failures = evaluate(warn_level, meta, spec)
        if warn_failures:
            attrs.add_warning(f'would violate PodSecurity "{warn_level}:{warn_version}": '
                              f"{describe(warn_failures)}")
        elif not enforce and enforce_failures:  # a workload that enforce would refuse
            attrs.add_warning(f'would violate PodSecurity "{level}:{version}": '
                              f"{describe(enforce_failures)}")

    async def _namespace(self, attrs: Attributes) -> None:
        labels = _labels(attrs.object)
        errors = []
        for mode in MODES:
            value = labels.get(PREFIX + mode)
            if value is not None and value not in LEVELS:
                errors.append(apierrors.FieldError.invalid(
                    f"metadata.labels[{PREFIX}{mode}]", value,
                    "must be one of privileged, baseline, restricted"))
            version = labels.get(f"{PREFIX}{mode}-version")
            if version is not None and not _VERSION.match(version):
                errors.append(apierrors.FieldError.invalid(
                    f"metadata.labels[{PREFIX}{mode}-version]", version,
                    'must be "latest" or "v1.x"'))
        if errors:
            raise apierrors.invalid("Namespace", attrs.name, errors)
        if attrs.operation != UPDATE:
            return
        new = policy(labels, "enforce")
        if new == policy(_labels(attrs.old_object), "enforce") or new[0] == "privileged":
            return
        await self._warn_existing_pods(attrs, *new)

    async def _warn_existing_pods(self, attrs: Attributes, level: str, version: str) -> None:
        lines = []
        for pod in await self.lookup.list("", "pods", attrs.name):
            failures = evaluate(level, pod.get("metadata") or {}, pod.get("spec") or {})
            if failures:
                titles = ", ".join(title for title, _ in failures)
                lines.append(f"{pod['metadata']['name']}: {titles}")
        if lines:
            attrs.add_warning(f'existing pods in namespace "{attrs.name}" violate the new '
                              f'PodSecurity enforce level "{level}:{version}"')
            for line in lines:
                attrs.add_warning(line)
