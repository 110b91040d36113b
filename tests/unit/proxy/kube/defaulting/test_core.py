"""Defaulting of the core group's kinds, table-driven: each expected object is what
kube-apiserver 1.37 returns for the sent one, derived from the upstream function each
case names (``pkg/apis/core/v1/defaults.go``, ``k8s.io/api/core/v1`` markers)."""

from __future__ import annotations

import pytest

from tests.unit.proxy.kube.defaulting.cases import (
    CONTAINER_DEFAULTS,
    POD_SPEC_DEFAULTS,
    Case,
    defaulted_template,
    template,
)

_LATEST = {"name": "c", "image": "nginx", "imagePullPolicy": "Always", **CONTAINER_DEFAULTS}


def _pod(spec: dict[str, object]) -> dict[str, object]:
    return {"metadata": {"name": "p"}, "spec": spec}


CASES = [
    Case("pod: kubectl run", "", "v1", "Pod",
         _pod({"containers": [{"name": "c", "image": "nginx"}]}),
         _pod({"containers": [_LATEST], "enableServiceLinks": True, **POD_SPEC_DEFAULTS}),
         "SetDefaults_Pod, SetDefaults_PodSpec, SetDefaults_Container"),
    Case("pod: tagged image, ports, probes, env", "", "v1", "Pod",
         _pod({"containers": [{
             "name": "c", "image": "nginx:1.27",
             "ports": [{"containerPort": 80}],
             "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
             "livenessProbe": {"httpGet": {"port": 80}},
             "readinessProbe": {"grpc": {"port": 9090}, "periodSeconds": 5},
             "lifecycle": {"preStop": {"httpGet": {"port": 8080, "path": "/stop"}}},
         }], "restartPolicy": "Never", "dnsPolicy": "Default"}),
         _pod({"containers": [{
             "name": "c", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent",
             **CONTAINER_DEFAULTS,
             "ports": [{"containerPort": 80, "protocol": "TCP"}],
             "env": [{"name": "N", "valueFrom": {
                 "fieldRef": {"fieldPath": "metadata.name", "apiVersion": "v1"}}}],
             "livenessProbe": {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
                               "timeoutSeconds": 1, "periodSeconds": 10,
                               "successThreshold": 1, "failureThreshold": 3},
             "readinessProbe": {"grpc": {"port": 9090, "service": ""}, "periodSeconds": 5,
                                "timeoutSeconds": 1, "successThreshold": 1,
                                "failureThreshold": 3},
             "lifecycle": {"preStop": {"httpGet": {"port": 8080, "path": "/stop",
                                                   "scheme": "HTTP"}}},
         }], "enableServiceLinks": True, "restartPolicy": "Never", "dnsPolicy": "Default",
             "securityContext": {}, "terminationGracePeriodSeconds": 30,
             "schedulerName": "default-scheduler"}),
         "SetDefaults_Probe, SetDefaults_HTTPGetAction, SetDefaults_ObjectFieldSelector, "
         "ContainerPort.Protocol and GRPCAction.Service +default"),
    Case("pod: requests from limits, host network ports", "", "v1", "Pod",
         _pod({"hostNetwork": True, "enableServiceLinks": False, "containers": [{
             "name": "c", "image": "nginx@sha256:" + "a" * 64,
             "ports": [{"containerPort": 53, "protocol": "UDP"}],
             "resources": {"limits": {"cpu": "1"}, "requests": {"memory": "1Gi"}}}]}),
         _pod({"hostNetwork": True, "enableServiceLinks": False, "containers": [{
             "name": "c", "image": "nginx@sha256:" + "a" * 64,
             "imagePullPolicy": "IfNotPresent", **CONTAINER_DEFAULTS,
             "ports": [{"containerPort": 53, "protocol": "UDP", "hostPort": 53}],
             "resources": {"limits": {"cpu": "1"},
                           "requests": {"memory": "1Gi", "cpu": "1"}}}],
             **POD_SPEC_DEFAULTS}),
         "SetDefaults_Pod (requests from limits, defaultHostNetworkPorts)"),
    Case("pod: volumes", "", "v1", "Pod",
         _pod({"containers": [], "volumes": [
             {"name": "none"},
             {"name": "s", "secret": {"secretName": "s"}},
             {"name": "cm", "configMap": {"name": "cm", "defaultMode": 256}},
             {"name": "h", "hostPath": {"path": "/tmp"}},
             {"name": "p", "projected": {"sources": [
                 {"serviceAccountToken": {"path": "token"}},
                 {"downwardAPI": {"items": [{"path": "n",
                                             "fieldRef": {"fieldPath": "metadata.name"}}]}},
             ]}},
             {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {
                 "accessModes": ["ReadWriteOnce"]}}}},
         ]}),
         _pod({"containers": [], "enableServiceLinks": True, **POD_SPEC_DEFAULTS,
               "volumes": [
             {"name": "none", "emptyDir": {}},
             {"name": "s", "secret": {"secretName": "s", "defaultMode": 420}},
             {"name": "cm", "configMap": {"name": "cm", "defaultMode": 256}},
             {"name": "h", "hostPath": {"path": "/tmp", "type": ""}},
             {"name": "p", "projected": {"defaultMode": 420, "sources": [
                 {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}},
                 {"downwardAPI": {"items": [{"path": "n", "fieldRef": {
                     "fieldPath": "metadata.name", "apiVersion": "v1"}}]}},
             ]}},
             {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {
                 "accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem"}}}},
         ]}),
         "SetDefaults_Volume, SetDefaults_*VolumeSource, "
         "SetDefaults_ServiceAccountTokenProjection, SetDefaults_PersistentVolumeClaimSpec"),
    Case("podtemplate: no Pod-only defaults", "", "v1", "PodTemplate",
         {"metadata": {"name": "t"}, "template": template()},
         {"metadata": {"name": "t"}, "template": defaulted_template()},
         "SetObjectDefaults_PodTemplate"),
    Case("replicationcontroller: selector and labels from the template", "", "v1",
         "ReplicationController",
         {"metadata": {"name": "rc"}, "spec": {"template": template()}},
         {"metadata": {"name": "rc", "labels": {"app": "web"}},
          "spec": {"template": defaulted_template(), "selector": {"app": "web"},
                   "replicas": 1}},
         "SetDefaults_ReplicationController, ReplicationControllerSpec.Replicas +default=1"),
    Case("service: ClusterIP", "", "v1", "Service",
         {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}, {
             "port": 53, "protocol": "UDP", "targetPort": "dns"}]}},
         {"metadata": {"name": "s"}, "spec": {
             "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80},
                       {"port": 53, "protocol": "UDP", "targetPort": "dns"}],
             "sessionAffinity": "None", "type": "ClusterIP",
             "internalTrafficPolicy": "Cluster"}},
         "SetDefaults_Service"),
    Case("service: LoadBalancer with ClientIP affinity", "", "v1", "Service",
         {"metadata": {"name": "s"}, "spec": {"type": "LoadBalancer",
                                              "sessionAffinity": "ClientIP"},
          "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}, {"hostname": "h"}]}}},
         {"metadata": {"name": "s"}, "spec": {
             "type": "LoadBalancer", "sessionAffinity": "ClientIP",
             "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
             "externalTrafficPolicy": "Cluster", "internalTrafficPolicy": "Cluster",
             "allocateLoadBalancerNodePorts": True},
          "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.1", "ipMode": "VIP"},
                                                  {"hostname": "h"}]}}},
         "SetDefaults_Service (ExternallyAccessible, ipMode)"),
    Case("service: ExternalName has no internalTrafficPolicy", "", "v1", "Service",
         {"metadata": {"name": "s"}, "spec": {"type": "ExternalName", "externalName": "x.io",
                                              "sessionAffinityConfig": {}}},
         {"metadata": {"name": "s"}, "spec": {"type": "ExternalName", "externalName": "x.io",
                                              "sessionAffinity": "None"}},
         "SetDefaults_Service"),
    Case("endpoints: ports' protocol", "", "v1", "Endpoints",
         {"metadata": {"name": "e"}, "subsets": [{"ports": [{"port": 80}]}]},
         {"metadata": {"name": "e"}, "subsets": [{"ports": [{"port": 80, "protocol": "TCP"}]}]},
         "SetDefaults_Endpoints"),
    Case("namespace: name label and phase", "", "v1", "Namespace",
         {"metadata": {"name": "team-a"}},
         {"metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "team-a"}},
          "status": {"phase": "Active"}},
         "SetDefaults_Namespace, SetDefaults_NamespaceStatus"),
    Case("node: allocatable is the capacity", "", "v1", "Node",
         {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "4"}}},
         {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "4"},
                                                "allocatable": {"cpu": "4"}}},
         "SetDefaults_NodeStatus"),
    Case("persistentvolume", "", "v1", "PersistentVolume",
         {"metadata": {"name": "pv"}, "spec": {"hostPath": {"path": "/d"},
                                               "capacity": {"storage": "1Gi"}}},
         {"metadata": {"name": "pv"}, "spec": {
             "hostPath": {"path": "/d", "type": ""}, "capacity": {"storage": "1Gi"},
             "persistentVolumeReclaimPolicy": "Retain", "volumeMode": "Filesystem"},
          "status": {"phase": "Pending"}},
         "SetDefaults_PersistentVolume, SetDefaults_HostPathVolumeSource"),
    Case("persistentvolumeclaim", "", "v1", "PersistentVolumeClaim",
         {"metadata": {"name": "c"}, "spec": {"accessModes": ["ReadWriteOnce"]}},
         {"metadata": {"name": "c"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                              "volumeMode": "Filesystem"},
          "status": {"phase": "Pending"}},
         "SetDefaults_PersistentVolumeClaim, SetDefaults_PersistentVolumeClaimSpec"),
    Case("secret: Opaque", "", "v1", "Secret",
         {"metadata": {"name": "s"}, "data": {}},
         {"metadata": {"name": "s"}, "data": {}, "type": "Opaque"},
         "SetDefaults_Secret"),
    Case("limitrange: default from max, request from default or min", "", "v1", "LimitRange",
         {"metadata": {"name": "l"}, "spec": {"limits": [
             {"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "1Mi"}},
             {"type": "Pod", "max": {"cpu": "4"}}]}},
         {"metadata": {"name": "l"}, "spec": {"limits": [
             {"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "1Mi"},
              "default": {"cpu": "2"}, "defaultRequest": {"cpu": "2", "memory": "1Mi"}},
             {"type": "Pod", "max": {"cpu": "4"}}]}},
         "SetDefaults_LimitRangeItem"),
    Case("configmap: nothing to default", "", "v1", "ConfigMap",
         {"metadata": {"name": "c"}, "data": {"a": "b"}},
         {"metadata": {"name": "c"}, "data": {"a": "b"}},
         "SetDefaults_ConfigMap (an empty data map is omitted on the wire)"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_core_defaults(case: Case) -> None:
    assert case.run() == case.want, case.source


def test_a_defaulted_object_is_unchanged_by_defaulting_again() -> None:
    for case in CASES:
        assert Case(case.id, case.group, case.version, case.kind, case.want, case.want,
                    case.source).run() == case.want  # fmt: skip


def test_members_of_the_wrong_type_are_left_for_validation() -> None:
    sent = {"metadata": {"name": "p"}, "spec": {"containers": "c", "volumes": [1, None]}}
    got = Case("", "", "v1", "Pod", sent, {}, "").run()
    assert got["spec"]["containers"] == "c" and got["spec"]["volumes"] == [1, None]
    assert Case("", "", "v1", "Pod", {"spec": 3}, {}, "").run() == {"spec": 3}
