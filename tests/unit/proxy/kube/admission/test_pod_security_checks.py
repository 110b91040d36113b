"""The Pod Security Standards' checks against kube-apiserver's answers for the same pods
(each expected text was read from a kube-apiserver's 403 or Warning)."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.kube.admission.pod_security.checks import evaluate
from proxy.kube.admission.pod_security.plugin import describe

PLAIN: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"},
                                        {"name": "d", "image": "busybox"}]}
WILD: dict[str, Any] = {
    "hostNetwork": True, "hostPID": True,
    "volumes": [{"name": "h", "hostPath": {"path": "/tmp"}}, {"name": "e", "emptyDir": {}}],
    "securityContext": {"seccompProfile": {"type": "Unconfined"},
                        "sysctls": [{"name": "kernel.msgmax", "value": "1"}]},
    "containers": [
        {"name": "c", "image": "busybox", "ports": [{"containerPort": 80, "hostPort": 80}],
         "securityContext": {"capabilities": {"add": ["NET_ADMIN", "CHOWN"]}, "runAsUser": 0,
                             "seLinuxOptions": {"type": "foo"}}},
        {"name": "d", "image": "busybox", "securityContext": {"allowPrivilegeEscalation": True}},
    ],
}
GOOD: dict[str, Any] = {
    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [{"name": "c", "image": "busybox", "securityContext": {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE", "NET_RAW"]}}}],
}

UPSTREAM = [
    ("restricted", PLAIN,
     'allowPrivilegeEscalation != false (containers "c", "d" must set securityContext.'
     'allowPrivilegeEscalation=false), unrestricted capabilities (containers "c", "d" must '
     'set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or containers '
     '"c", "d" must set securityContext.runAsNonRoot=true), seccompProfile (pod or containers '
     '"c", "d" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'),
    ("baseline", PLAIN, ""),
    ("baseline", WILD,
     'non-default capabilities (container "c" must not include "NET_ADMIN" in securityContext.'
     'capabilities.add), host namespaces (hostNetwork=true, hostPID=true), hostPath volumes '
     '(volume "h"), hostPort (container "c" uses hostPort 80), seLinuxOptions (container "c" '
     'set forbidden securityContext.seLinuxOptions: type "foo"), seccompProfile (pod must not '
     'set securityContext.seccompProfile.type to "Unconfined"), forbidden sysctls '
     "(kernel.msgmax)"),
    ("restricted", WILD,
     'host namespaces (hostNetwork=true, hostPID=true), hostPort (container "c" uses hostPort '
     '80), seLinuxOptions (container "c" set forbidden securityContext.seLinuxOptions: type '
     '"foo"), forbidden sysctls (kernel.msgmax), allowPrivilegeEscalation != false (containers '
     '"c", "d" must set securityContext.allowPrivilegeEscalation=false), unrestricted '
     'capabilities (containers "c", "d" must set securityContext.capabilities.drop=["ALL"]; '
     'container "c" must not include "CHOWN", "NET_ADMIN" in securityContext.capabilities.add),'
     ' restricted volume types (volume "h" uses restricted volume type "hostPath"), '
     'runAsNonRoot != true (pod or containers "c", "d" must set securityContext.runAsNonRoot='
     'true), runAsUser=0 (container "c" must not set runAsUser=0), seccompProfile (pod must '
     'not set securityContext.seccompProfile.type to "Unconfined")'),
    ("restricted", GOOD,
     'unrestricted capabilities (container "c" must not include "NET_RAW" in securityContext.'
     "capabilities.add)"),
    ("privileged", WILD, ""),
]


@pytest.mark.parametrize(("level", "spec", "expected"), UPSTREAM)
def test_checks_word_for_word(level: str, spec: dict[str, Any], expected: str) -> None:
    assert describe(evaluate(level, {}, spec)) == expected


def test_privileged_container() -> None:
    spec = {"containers": [{"name": "c", "securityContext": {"privileged": True}}]}
    assert describe(evaluate("baseline", {}, spec)) == (
        'privileged (container "c" must not set securityContext.privileged=true)')
