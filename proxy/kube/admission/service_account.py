"""The ServiceAccount admission plugin (kube's ``plugin/pkg/admission/serviceaccount``),
on pod creation:

- ``spec.serviceAccountName`` defaults to ``default`` (and the deprecated
  ``spec.serviceAccount`` follows it);
- the service account must exist: 403 ``error looking up service account NS/NAME:
  serviceaccount "NAME" not found``;
- unless the pod or the service account opt out (``automountServiceAccountToken:
  false``) or a container already mounts the path, the projected token volume
  ``kube-api-access-xxxxx`` (token, ``kube-root-ca.crt``, namespace) is added and
  mounted read-only at ``/var/run/secrets/kubernetes.io/serviceaccount`` in every
  container and init container.

No serviceaccounts controller runs here (upstream's kube-controller-manager creates
``default`` in every namespace), so a missing ``default`` account is not an error: the
pod is admitted without the token volume (docs/admission.md).
"""

from __future__ import annotations

import secrets
from typing import Any

from proxy import apierrors
from proxy.admission.attributes import CREATE, Attributes
from proxy.admission.interfaces import Plugin
from proxy.kube.admission.pods import is_pod

__all__ = ["MOUNT_PATH", "ServiceAccount", "token_volume"]

JSON = dict[str, Any]
MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
DEFAULT = "default"
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's utilrand


def token_volume(name: str) -> JSON:
    return {"name": name, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt",
                                                              "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ]}}  # fmt: skip


class ServiceAccount(Plugin):
    name = "ServiceAccount"
    operations = frozenset({CREATE})
    mutating = True

    async def _account(self, namespace: str, name: str) -> JSON | None:
        """From the cache, else from etcd (a service account created just before)."""
        account = await self.lookup.get("", "serviceaccounts", namespace, name)
        if account is None:
            account = await self.lookup.get("", "serviceaccounts", namespace, name, fresh=True)
        return account

    async def admit(self, attrs: Attributes) -> None:
        if not is_pod(attrs) or attrs.subresource or attrs.object is None:
            return
        pod = attrs.object
        if MIRROR_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {}):
            return
        spec = pod.setdefault("spec", {})
        name = str(spec.get("serviceAccountName") or spec.get("serviceAccount") or DEFAULT)
        spec["serviceAccountName"] = name
        spec.setdefault("serviceAccount", name)
        account = await self._account(attrs.namespace, name)
        if account is None:
            if name == DEFAULT:
                return
            raise apierrors.forbidden(
                "pods", attrs.name, f"error looking up service account {attrs.namespace}/"
                f'{name}: serviceaccount "{name}" not found')
        if spec.get("automountServiceAccountToken") is False:
            return
        if spec.get("automountServiceAccountToken") is None and account.get(
                "automountServiceAccountToken") is False:  # fmt: skip
            return
        self._mount(spec)

    @staticmethod
    def _mount(spec: JSON) -> None:
        containers = [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]
        needing = [c for c in containers if not any(
            m.get("mountPath") == MOUNT_PATH for m in c.get("volumeMounts") or ())]
        if not needing:
            return
        volume = "kube-api-access-" + "".join(secrets.choice(_ALPHABET) for _ in range(5))
        spec.setdefault("volumes", []).append(token_volume(volume))
        for container in needing:
            container.setdefault("volumeMounts", []).append(
                {"name": volume, "readOnly": True, "mountPath": MOUNT_PATH})
