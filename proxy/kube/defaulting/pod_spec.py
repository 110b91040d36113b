"""Defaults of a PodSpec and what it holds (``pkg/apis/core/v1/defaults.go`` and the
declarative ``+default`` markers of ``k8s.io/api/core/v1``, as
``zz_generated.defaults.go`` applies them): the same walk for a Pod's spec and for
every pod template (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob,
ReplicationController, PodTemplate). What only a Pod gets (``SetDefaults_Pod``) is in
``core``.
"""

from __future__ import annotations

import re

from proxy.kube.defaulting.fields import JSON, child, default_nil, default_zero, dicts, member

__all__ = [
    "default_container",
    "default_persistent_volume_claim_spec",
    "default_pod_spec",
    "default_pod_template",
    "pull_policy",
]

_CONTAINER_KINDS = ("initContainers", "containers", "ephemeralContainers")
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")

# the reference grammar of the distribution library (ParseNormalizedNamed) that
# ``parsers.ParseImageName`` uses: an image that does not parse has no tag
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_LABEL = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
_DOMAIN = rf"(?:{_LABEL}(?:\.{_LABEL})*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?"
_TAG = r"(?::(?P<tag>\w[\w.-]{0,127}))?"
_DIGEST = r"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?"
_REFERENCE = re.compile(rf"^(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*{_TAG}{_DIGEST}$")


def pull_policy(image: object) -> str:
    """``SetDefaults_Container``'s imagePullPolicy: Always for the ``latest`` tag, which
    an image without tag or digest has; IfNotPresent otherwise, and for an image that
    does not parse (``ParseImageName`` fails: no tag)."""
    found = _REFERENCE.match(image) if isinstance(image, str) else None
    if found is None:
        return "IfNotPresent"
    tag = found["tag"] or ("" if found["digest"] else "latest")
    return "Always" if tag == "latest" else "IfNotPresent"


def _http_get(handler: JSON | None) -> None:
    """``SetDefaults_HTTPGetAction``; a gRPC probe's service is ``+default=""``."""
    if handler is None:
        return
    if (get := member(handler, "httpGet")) is not None:
        default_zero(get, "path", "/")
        default_zero(get, "scheme", "HTTP")
    if (grpc := member(handler, "grpc")) is not None:
        default_nil(grpc, "service", "")


def _probe(probe: JSON) -> None:
    """``SetDefaults_Probe`` and its handler's."""
    default_zero(probe, "timeoutSeconds", 1)
    default_zero(probe, "periodSeconds", 10)
    default_zero(probe, "successThreshold", 1)
    default_zero(probe, "failureThreshold", 3)
    _http_get(probe)


def default_container(ctr: JSON) -> None:
    """``SetDefaults_Container`` (ephemeral containers too), ports' protocol
    (``+default="TCP"``), env fieldRefs, probes and lifecycle handlers."""
    default_zero(ctr, "imagePullPolicy", pull_policy(ctr.get("image")))
    default_zero(ctr, "terminationMessagePath", "/dev/termination-log")
    default_zero(ctr, "terminationMessagePolicy", "File")
    for port in dicts(ctr, "ports"):
        default_zero(port, "protocol", "TCP")
    for env in dicts(ctr, "env"):
        value_from = member(env, "valueFrom")
        if value_from is not None:
            _field_ref(member(value_from, "fieldRef"))
    for name in _PROBES:
        if (probe := member(ctr, name)) is not None:
            _probe(probe)
    if (lifecycle := member(ctr, "lifecycle")) is not None:
        for hook in ("postStart", "preStop"):
            _http_get(member(lifecycle, hook))


def _field_ref(ref: JSON | None) -> None:
    """``SetDefaults_ObjectFieldSelector``."""
    if ref is not None:
        default_zero(ref, "apiVersion", "v1")


def _downward_items(source: JSON | None) -> None:
    for item in dicts(source, "items"):
        _field_ref(member(item, "fieldRef"))


_VOLUME_SOURCES = (
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo",
    "secret", "nfs", "iscsi", "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume",
    "cinder", "cephfs", "flocker", "downwardAPI", "fc", "azureFile", "configMap",
    "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "projected",
    "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral", "image",
)  # fmt: skip


def _volume(volume: JSON) -> None:
    """``SetDefaults_Volume`` (no source at all is an emptyDir; an image volume's pull
    policy as a container's) and each source's own defaults."""
    if all(volume.get(source) is None for source in _VOLUME_SOURCES):
        volume["emptyDir"] = {}
    if (image := member(volume, "image")) is not None:
        default_zero(image, "pullPolicy", pull_policy(image.get("reference")))
    if (host_path := member(volume, "hostPath")) is not None:
        default_nil(host_path, "type", "")  # SetDefaults_HostPathVolumeSource
    for source in ("secret", "configMap", "downwardAPI", "projected"):
        if (found := member(volume, source)) is not None:
            default_nil(found, "defaultMode", 0o644)  # SetDefaults_*VolumeSource
    _downward_items(member(volume, "downwardAPI"))
    for projection in dicts(member(volume, "projected"), "sources"):
        _downward_items(member(projection, "downwardAPI"))
        if (token := member(projection, "serviceAccountToken")) is not None:
            default_nil(token, "expirationSeconds", 3600)
    _legacy_sources(volume)
    ephemeral = member(volume, "ephemeral")
    template = member(ephemeral, "volumeClaimTemplate") if ephemeral is not None else None
    if template is not None and (spec := member(template, "spec")) is not None:
        default_persistent_volume_claim_spec(spec)


def _legacy_sources(volume: JSON) -> None:
    """The in-tree sources' defaults (``SetDefaults_ISCSIVolumeSource``,
    ``SetDefaults_RBDVolumeSource``, ``SetDefaults_AzureDiskVolumeSource``,
    ``SetDefaults_ScaleIOVolumeSource``; their PersistentVolume twins alike)."""
    if (iscsi := member(volume, "iscsi")) is not None:
        default_zero(iscsi, "iscsiInterface", "default")
    if (rbd := member(volume, "rbd")) is not None:
        default_zero(rbd, "pool", "rbd")
        default_zero(rbd, "user", "admin")
        default_zero(rbd, "keyring", "/etc/ceph/keyring")
    if (azure := member(volume, "azureDisk")) is not None:
        default_nil(azure, "cachingMode", "ReadWrite")
        default_nil(azure, "fsType", "ext4")
        default_nil(azure, "readOnly", False)
        default_nil(azure, "kind", "Shared")
    if (scale_io := member(volume, "scaleIO")) is not None:
        default_zero(scale_io, "storageMode", "ThinProvisioned")
        default_zero(scale_io, "fsType", "xfs")


def default_persistent_volume_claim_spec(spec: JSON) -> None:
    """``SetDefaults_PersistentVolumeClaimSpec``."""
    default_nil(spec, "volumeMode", "Filesystem")


def default_pod_spec(spec: JSON) -> None:
    """``SetDefaults_PodSpec`` and everything the spec holds (volumes, containers)."""
    default_zero(spec, "dnsPolicy", "ClusterFirst")
    default_zero(spec, "restartPolicy", "Always")
    default_nil(spec, "securityContext", {})
    default_nil(spec, "terminationGracePeriodSeconds", 30)
    default_zero(spec, "schedulerName", "default-scheduler")
    for volume in dicts(spec, "volumes"):
        _volume(volume)
    for kind in _CONTAINER_KINDS:
        for ctr in dicts(spec, kind):
            default_container(ctr)


def default_pod_template(holder: JSON | None, key: str = "template") -> None:
    """The pod template ``holder[key]`` (a PodTemplateSpec): its spec's defaults."""
    template = member(holder, key) if holder is not None else None
    if template is not None and (spec := child(template, "spec")) is not None:
        default_pod_spec(spec)
