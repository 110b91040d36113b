"""Defaulting of the other groups' kinds, table-driven: each expected object is what
kube-apiserver 1.37 returns, derived from the ``pkg/apis/<group>/<version>/defaults.go``
function each case names."""

from __future__ import annotations

import pytest

from tests.unit.proxy.kube.defaulting.cases import Case

_M = {"name": "x"}
_SCALE_UP = {
    "stabilizationWindowSeconds": 0,
    "selectPolicy": "Max",
    "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15},
    ],
}
_SCALE_DOWN = {
    "selectPolicy": "Max",
    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
}
_TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
_CPU = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
}
_HOOK = {
    "name": "h.example.com",
    "sideEffects": "None",
    "admissionReviewVersions": ["v1"],
    "clientConfig": {"service": {"name": "s", "namespace": "n"}},
    "rules": [
        {"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}
    ],
}
_HOOK_DEFAULTS = {
    "failurePolicy": "Fail",
    "matchPolicy": "Equivalent",
    "namespaceSelector": {},
    "objectSelector": {},
    "timeoutSeconds": 10,
    "clientConfig": {"service": {"name": "s", "namespace": "n", "port": 443}},
    "rules": [{**_HOOK["rules"][0], "scope": "*"}],  # type: ignore[index]
}
_RULES = [
    {
        "operations": ["CREATE"],
        "apiGroups": ["apps"],
        "apiVersions": ["v1"],
        "resources": ["deployments"],
    }
]
_MATCH = {
    "matchPolicy": "Equivalent",
    "namespaceSelector": {},
    "objectSelector": {},
    "resourceRules": [{**_RULES[0], "scope": "*"}],
}

CASES = [
    Case("hpa v2: kubectl autoscale", "autoscaling", "v2", "HorizontalPodAutoscaler",
         {"metadata": _M, "spec": {"scaleTargetRef": _TARGET, "maxReplicas": 5}},
         {"metadata": _M, "spec": {"scaleTargetRef": _TARGET, "maxReplicas": 5,
                                   "minReplicas": 1, "metrics": [_CPU]}},
         "SetDefaults_HorizontalPodAutoscaler (v2)"),
    Case("hpa v2: a behavior's unset rules", "autoscaling", "v2", "HorizontalPodAutoscaler",
         {"metadata": _M, "spec": {"scaleTargetRef": _TARGET, "maxReplicas": 5,
                                   "metrics": [_CPU], "behavior": {
                                       "scaleDown": {"stabilizationWindowSeconds": 60}}}},
         {"metadata": _M, "spec": {"scaleTargetRef": _TARGET, "maxReplicas": 5,
                                   "minReplicas": 1, "metrics": [_CPU], "behavior": {
                                       "scaleUp": _SCALE_UP,
                                       "scaleDown": {**_SCALE_DOWN,
                                                     "stabilizationWindowSeconds": 60}}}},
         "SetDefaults_HorizontalPodAutoscalerBehavior, GenerateHPAScale{Up,Down}Rules"),
    Case("hpa v1", "autoscaling", "v1", "HorizontalPodAutoscaler",
         {"metadata": _M, "spec": {"scaleTargetRef": _TARGET, "maxReplicas": 5}},
         {"metadata": _M, "spec": {"scaleTargetRef": _TARGET, "maxReplicas": 5,
                                   "minReplicas": 1}},
         "SetDefaults_HorizontalPodAutoscaler (v1)"),
    Case("networkpolicy: egress rules add Egress", "networking.k8s.io", "v1",
         "NetworkPolicy",
         {"metadata": _M, "spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53}]}]}},
         {"metadata": _M, "spec": {"podSelector": {},
                                   "egress": [{"ports": [{"port": 53, "protocol": "TCP"}]}],
                                   "policyTypes": ["Ingress", "Egress"]}},
         "SetDefaults_NetworkPolicy, SetDefaults_NetworkPolicyPort"),
    Case("ingressclass: parameters' scope", "networking.k8s.io", "v1", "IngressClass",
         {"metadata": _M, "spec": {"controller": "x.io/c",
                                   "parameters": {"kind": "K", "name": "p"}}},
         {"metadata": _M, "spec": {"controller": "x.io/c",
                                   "parameters": {"kind": "K", "name": "p",
                                                  "scope": "Cluster"}}},
         "SetDefaults_IngressClass"),
    Case("rolebinding: apiGroups of roleRef and subjects", "rbac.authorization.k8s.io", "v1",
         "RoleBinding",
         {"metadata": _M, "roleRef": {"kind": "Role", "name": "r"}, "subjects": [
             {"kind": "User", "name": "u"}, {"kind": "Group", "name": "g"},
             {"kind": "ServiceAccount", "name": "sa", "namespace": "n"}]},
         {"metadata": _M, "roleRef": {"kind": "Role", "name": "r",
                                      "apiGroup": "rbac.authorization.k8s.io"}, "subjects": [
             {"kind": "User", "name": "u", "apiGroup": "rbac.authorization.k8s.io"},
             {"kind": "Group", "name": "g", "apiGroup": "rbac.authorization.k8s.io"},
             {"kind": "ServiceAccount", "name": "sa", "namespace": "n", "apiGroup": ""}]},
         "SetDefaults_RoleBinding, SetDefaults_Subject"),
    Case("clusterrolebinding", "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding",
         {"metadata": _M, "roleRef": {"kind": "ClusterRole", "name": "r"}},
         {"metadata": _M, "roleRef": {"kind": "ClusterRole", "name": "r",
                                      "apiGroup": "rbac.authorization.k8s.io"}},
         "SetDefaults_ClusterRoleBinding"),
    Case("priorityclass", "scheduling.k8s.io", "v1", "PriorityClass",
         {"metadata": _M, "value": 1000},
         {"metadata": _M, "value": 1000, "preemptionPolicy": "PreemptLowerPriority"},
         "SetDefaults_PriorityClass"),
    Case("storageclass", "storage.k8s.io", "v1", "StorageClass",
         {"metadata": _M, "provisioner": "x.io/p"},
         {"metadata": _M, "provisioner": "x.io/p", "reclaimPolicy": "Delete",
          "volumeBindingMode": "Immediate"},
         "SetDefaults_StorageClass"),
    Case("csidriver", "storage.k8s.io", "v1", "CSIDriver",
         {"metadata": _M, "spec": {}},
         {"metadata": _M, "spec": {
             "attachRequired": True, "podInfoOnMount": False, "storageCapacity": False,
             "fsGroupPolicy": "ReadWriteOnceWithFSType", "volumeLifecycleModes": ["Persistent"],
             "requiresRepublish": False, "seLinuxMount": False}},
         "SetDefaults_CSIDriver"),
    Case("endpointslice", "discovery.k8s.io", "v1", "EndpointSlice",
         {"metadata": _M, "addressType": "IPv4", "ports": [{"port": 80}]},
         {"metadata": _M, "addressType": "IPv4",
          "ports": [{"port": 80, "name": "", "protocol": "TCP"}]},
         "SetDefaults_EndpointPort"),
    Case("validatingwebhookconfiguration", "admissionregistration.k8s.io", "v1",
         "ValidatingWebhookConfiguration",
         {"metadata": _M, "webhooks": [_HOOK]},
         {"metadata": _M, "webhooks": [{**_HOOK, **_HOOK_DEFAULTS}]},
         "SetDefaults_ValidatingWebhook, SetDefaults_Rule, SetDefaults_ServiceReference"),
    Case("mutatingwebhookconfiguration", "admissionregistration.k8s.io", "v1",
         "MutatingWebhookConfiguration",
         {"metadata": _M, "webhooks": [_HOOK]},
         {"metadata": _M, "webhooks": [{**_HOOK, **_HOOK_DEFAULTS,
                                        "reinvocationPolicy": "Never"}]},
         "SetDefaults_MutatingWebhook"),
    Case("validatingadmissionpolicy", "admissionregistration.k8s.io", "v1",
         "ValidatingAdmissionPolicy",
         {"metadata": _M, "spec": {"matchConstraints": {"resourceRules": _RULES},
                                   "validations": [{"expression": "true"}]}},
         {"metadata": _M, "spec": {"matchConstraints": _MATCH, "failurePolicy": "Fail",
                                   "validations": [{"expression": "true"}]}},
         "SetDefaults_ValidatingAdmissionPolicySpec, SetDefaults_MatchResources"),
    Case("validatingadmissionpolicybinding", "admissionregistration.k8s.io", "v1",
         "ValidatingAdmissionPolicyBinding",
         {"metadata": _M, "spec": {"policyName": "p", "validationActions": ["Deny"],
                                   "paramRef": {"name": "c"}}},
         {"metadata": _M, "spec": {"policyName": "p", "validationActions": ["Deny"],
                                   "paramRef": {"name": "c",
                                                "parameterNotFoundAction": "Deny"}}},
         "SetDefaults_ParamRef"),
    Case("flowschema", "flowcontrol.apiserver.k8s.io", "v1", "FlowSchema",
         {"metadata": _M, "spec": {"priorityLevelConfiguration": {"name": "p"}}},
         {"metadata": _M, "spec": {"priorityLevelConfiguration": {"name": "p"},
                                   "matchingPrecedence": 1000}},
         "SetDefaults_FlowSchemaSpec"),
    Case("prioritylevelconfiguration: limited, queuing", "flowcontrol.apiserver.k8s.io",
         "v1", "PriorityLevelConfiguration",
         {"metadata": _M, "spec": {"type": "Limited", "limited": {
             "limitResponse": {"type": "Queue", "queuing": {}}}}},
         {"metadata": _M, "spec": {"type": "Limited", "limited": {
             "nominalConcurrencyShares": 30, "lendablePercent": 0,
             "limitResponse": {"type": "Queue", "queuing": {
                 "handSize": 8, "queues": 64, "queueLengthLimit": 50}}}}},
         "SetDefaults_LimitedPriorityLevelConfiguration, SetDefaults_QueuingConfiguration"),
    Case("prioritylevelconfiguration: exempt", "flowcontrol.apiserver.k8s.io", "v1",
         "PriorityLevelConfiguration",
         {"metadata": _M, "spec": {"type": "Exempt", "exempt": {}}},
         {"metadata": _M, "spec": {"type": "Exempt", "exempt": {
             "nominalConcurrencyShares": 0, "lendablePercent": 0}}},
         "SetDefaults_ExemptPriorityLevelConfiguration"),
    Case("certificatesigningrequest: conditions' status", "certificates.k8s.io", "v1",
         "CertificateSigningRequest",
         {"metadata": _M, "status": {"conditions": [{"type": "Approved"}]}},
         {"metadata": _M, "status": {"conditions": [{"type": "Approved", "status": "True"}]}},
         "SetDefaults_CertificateSigningRequestCondition"),
    Case("resourceclaim: ExactCount of one", "resource.k8s.io", "v1", "ResourceClaim",
         {"metadata": _M, "spec": {"devices": {"requests": [
             {"name": "gpu", "exactly": {"deviceClassName": "gpu",
                                         "tolerations": [{"key": "k"}]}}]}}},
         {"metadata": _M, "spec": {"devices": {"requests": [
             {"name": "gpu", "exactly": {"deviceClassName": "gpu", "allocationMode":
                                         "ExactCount", "count": 1,
                                         "tolerations": [{"key": "k", "operator": "Equal"}]}}
         ]}}},
         "SetDefaults_ExactDeviceRequest, SetDefaults_DeviceToleration"),
    Case("lease: nothing to default", "coordination.k8s.io", "v1", "Lease",
         {"metadata": _M, "spec": {}}, {"metadata": _M, "spec": {}}, "(no defaults.go)"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_group_defaults(case: Case) -> None:
    assert case.run() == case.want, case.source
