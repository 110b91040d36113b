"""The storage.k8s.io group's defaults (``pkg/apis/storage/v1/defaults.go``), with
``SELinuxMountReadWriteOncePod`` on as in 1.37."""

from __future__ import annotations

from collections.abc import Callable

from proxy.kube.defaulting.fields import JSON, child, default_nil

__all__ = ["DEFAULTERS"]


def storage_class(obj: JSON) -> None:
    """``SetDefaults_StorageClass``: reclaimPolicy Delete, volumeBindingMode Immediate."""
    default_nil(obj, "reclaimPolicy", "Delete")
    default_nil(obj, "volumeBindingMode", "Immediate")


def csi_driver(obj: JSON) -> None:
    """``SetDefaults_CSIDriver``."""
    spec = child(obj, "spec")
    if spec is None:
        return
    default_nil(spec, "attachRequired", True)
    default_nil(spec, "podInfoOnMount", False)
    default_nil(spec, "storageCapacity", False)
    default_nil(spec, "fsGroupPolicy", "ReadWriteOnceWithFSType")
    if not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]
    default_nil(spec, "requiresRepublish", False)
    default_nil(spec, "seLinuxMount", False)


DEFAULTERS: dict[str, Callable[[JSON], None]] = {
    "StorageClass": storage_class,
    "CSIDriver": csi_driver,
}
