"""A node's simulated container runtime: what the kubelet API serves about a pod's
containers, derived from the pod as the node agent knows it (its informer's copy).

- :func:`instances`: the current and the previous run of a container, from its
  status (``state.running``, ``lastState.terminated``), for its log
  (:mod:`lab.sim.container_logs`);
- :meth:`Runtime.filesystem`: the container's in-memory filesystem, built on first use
  from the pod's spec (the volumes its ``volumeMounts`` name: ConfigMaps, Secrets, the
  projected service-account token through the TokenRequest API, downward API) and kept
  for as long as that run of the container lives (files written by ``exec`` or
  ``kubectl cp`` stay until it restarts);
- :func:`environment`: its environment (the spec's ``env``, resolved as the kubelet
  does, and the variables every container gets).
"""

from __future__ import annotations

import base64
import logging
import posixpath
from dataclasses import dataclass, field

from lab.sim.client import JSON, APIError, Client
from lab.sim.container_fs import FileSystem
from lab.sim.container_logs import Instance, parse_time

__all__ = ["Runtime", "container_spec", "container_status", "environment", "instances"]

log = logging.getLogger("watchcache.sim")

_SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
_TOKEN_SECONDS = 3607  # what the ServiceAccount admission plugin asks for


def container_spec(pod: JSON, name: str) -> JSON | None:
    spec = pod.get("spec") or {}
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for c in spec.get(key) or []:
            if c.get("name") == name:
                return dict(c)
    return None


def container_status(pod: JSON, name: str) -> JSON | None:
    status = pod.get("status") or {}
    for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        for c in status.get(key) or []:
            if c.get("name") == name:
                return dict(c)
    return None


def _instance(pod: JSON, name: str, image: str, state: JSON, key: str) -> Instance | None:
    meta = pod.get("metadata") or {}
    spec = container_spec(pod, name) or {}
    quiet = bool(spec.get("command") or spec.get("stdin"))
    running, terminated = state.get("running"), state.get("terminated")
    if running and running.get("startedAt"):
        return Instance(str(meta.get("name")), name, image, key, parse_time(running["startedAt"]),
                        quiet=quiet)  # fmt: skip
    if terminated and terminated.get("startedAt") and terminated.get("finishedAt"):
        return Instance(str(meta.get("name")), name, image, key,
                        parse_time(terminated["startedAt"]), parse_time(terminated["finishedAt"]),
                        int(terminated.get("exitCode") or 0), quiet)  # fmt: skip
    return None


def instances(pod: JSON, name: str) -> tuple[Instance | None, Instance | None, str]:
    """(the current run, the previous run, why it is waiting: "" when it is not)."""
    status = container_status(pod, name) or {}
    spec = container_spec(pod, name) or {}
    image = str(status.get("image") or spec.get("image") or "")
    state, last = status.get("state") or {}, status.get("lastState") or {}
    waiting = state.get("waiting")
    if not status:
        waiting = {"reason": "ContainerCreating"}
    current = _instance(pod, name, image, state, str(status.get("containerID") or name))
    previous_id = str((last.get("terminated") or {}).get("containerID") or "prev")
    previous = _instance(pod, name, image, last, previous_id)
    return current, previous, str((waiting or {}).get("reason") or "") if not current else ""


def environment(pod: JSON, container: JSON) -> dict[str, str]:
    """The container's environment: PATH, HOSTNAME and the Service variables every
    container gets, then its ``env`` (literal values and the downward API's fields)."""
    meta, status, spec = pod.get("metadata") or {}, pod.get("status") or {}, pod.get("spec") or {}
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
           "HOSTNAME": str(meta.get("name")), "HOME": "/root",
           "KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443",
           "KUBERNETES_PORT": "tcp://10.96.0.1:443"}  # fmt: skip
    fields = {"metadata.name": meta.get("name"), "metadata.namespace": meta.get("namespace"),
              "metadata.uid": meta.get("uid"), "spec.nodeName": spec.get("nodeName"),
              "status.podIP": status.get("podIP"), "status.hostIP": status.get("hostIP"),
              "spec.serviceAccountName": spec.get("serviceAccountName")}  # fmt: skip
    for var in container.get("env") or []:
        name = str(var.get("name"))
        if "value" in var:
            env[name] = str(var.get("value") or "")
        ref = ((var.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
        if ref in fields:
            env[name] = str(fields[ref] or "")
    return env


@dataclass
class Runtime:
    """The containers of one node: filesystems by (pod uid, container, container id)."""

    client: Client
    _filesystems: dict[tuple[str, str, str], FileSystem] = field(default_factory=dict)

    async def filesystem(self, pod: JSON, name: str) -> FileSystem:
        uid = str((pod.get("metadata") or {}).get("uid"))
        run = str((container_status(pod, name) or {}).get("containerID") or "")
        key = (uid, name, run)
        fs = self._filesystems.get(key)
        if fs is None:
            for old in [k for k in self._filesystems if k[:2] == (uid, name)]:
                del self._filesystems[old]  # the container restarted: a fresh filesystem
            fs = self._filesystems[key] = await self._build(pod, name)
        return fs

    def forget(self, uid: str) -> None:
        for key in [k for k in self._filesystems if k[0] == uid]:
            del self._filesystems[key]

    async def _build(self, pod: JSON, name: str) -> FileSystem:
        fs = FileSystem()
        meta, status = pod.get("metadata") or {}, pod.get("status") or {}
        for d in ("/bin", "/etc", "/root", "/tmp", "/usr/bin", "/var/log", "/proc"):
            fs.mkdir(d)
        pod_name, ns = str(meta.get("name")), str(meta.get("namespace"))
        ip = str(status.get("podIP") or "")
        fs.write("/etc/hostname", f"{pod_name}\n".encode())
        fs.write("/etc/hosts", (f"# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n"
                                f"{ip}\t{pod_name}\n").encode())  # fmt: skip
        fs.write("/etc/resolv.conf", (f"search {ns}.svc.cluster.local svc.cluster.local "
                                      "cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n"
                                      ).encode())  # fmt: skip
        fs.write("/etc/os-release", b'NAME="Debian GNU/Linux"\nVERSION_ID="12"\n'
                                    b'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n')  # fmt: skip
        container = container_spec(pod, name) or {}
        volumes = {str(v.get("name")): v for v in (pod.get("spec") or {}).get("volumes") or []}
        for mount in container.get("volumeMounts") or []:
            volume = volumes.get(str(mount.get("name")))
            path = str(mount.get("mountPath") or "")
            if volume is None or not path.startswith("/"):
                continue
            fs.mkdir(path)
            for rel, data in (await self._volume_files(pod, volume)).items():
                target = posixpath.join(path, rel)
                fs.mkdir(posixpath.dirname(target))
                fs.write(target, data, 0o644)
        return fs

    async def _volume_files(self, pod: JSON, volume: JSON) -> dict[str, bytes]:
        """The files a volume projects (relative path -> content), as the kubelet's
        volume plugins write them; what cannot be read is left out (logged)."""
        ns = str((pod.get("metadata") or {}).get("namespace"))
        try:
            if "configMap" in volume:
                return await self._configmap(ns, volume["configMap"])
            if "secret" in volume:
                return await self._secret(ns, volume["secret"])
            if "projected" in volume:
                files: dict[str, bytes] = {}
                for source in (volume["projected"] or {}).get("sources") or []:
                    files.update(await self._projection(pod, source))
                return files
        except APIError as e:
            log.info("volume %s of %s/%s: %s", volume.get("name"), ns,
                     (pod.get("metadata") or {}).get("name"), e)  # fmt: skip
        return {}

    async def _configmap(self, ns: str, ref: JSON) -> dict[str, bytes]:
        cm = await self.client.call(self.client.core.read_namespaced_config_map,
                                    str(ref.get("name")), ns)  # fmt: skip
        data = {k: str(v).encode() for k, v in (cm.get("data") or {}).items()}
        data.update({k: base64.b64decode(v) for k, v in (cm.get("binaryData") or {}).items()})
        return _items(data, ref.get("items"))

    async def _secret(self, ns: str, ref: JSON) -> dict[str, bytes]:
        secret = await self.client.call(self.client.core.read_namespaced_secret,
                                        str(ref.get("secretName")), ns)  # fmt: skip
        data = {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}
        return _items(data, ref.get("items"))

    async def _projection(self, pod: JSON, source: JSON) -> dict[str, bytes]:
        meta = pod.get("metadata") or {}
        ns = str(meta.get("namespace"))
        if "serviceAccountToken" in source:
            return {str(source["serviceAccountToken"].get("path") or "token"):
                    (await self._token(pod, source["serviceAccountToken"])).encode()}  # fmt: skip
        if "configMap" in source:
            return await self._configmap(ns, source["configMap"])
        if "secret" in source:
            return await self._secret(ns, {**source["secret"], "secretName":
                                           source["secret"].get("name")})  # fmt: skip
        if "downwardAPI" in source:
            values = {"metadata.namespace": ns, "metadata.name": str(meta.get("name"))}
            items = source["downwardAPI"].get("items") or []
            return {str(i.get("path")): values.get(str((i.get("fieldRef") or {}).get(
                "fieldPath")), "").encode() for i in items}  # fmt: skip
        return {}

    async def _token(self, pod: JSON, projection: JSON) -> str:
        """A bound service-account token from the TokenRequest API, as the kubelet asks
        for it (bound to the pod, for the projection's audience and expiry)."""
        meta = pod.get("metadata") or {}
        sa = str((pod.get("spec") or {}).get("serviceAccountName") or "default")
        bound = {"apiVersion": "v1", "kind": "Pod", "name": meta.get("name"),
                 "uid": meta.get("uid")}  # fmt: skip
        seconds = int(projection.get("expirationSeconds") or _TOKEN_SECONDS)
        spec: JSON = {"expirationSeconds": seconds, "boundObjectRef": bound}
        if projection.get("audience"):
            spec["audiences"] = [projection["audience"]]
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
        answer = await self.client.raw(
            "POST", f"/api/v1/namespaces/{meta.get('namespace')}/serviceaccounts/{sa}/token",
            body,
        )  # fmt: skip
        return str((answer.get("status") or {}).get("token") or "")


def _items(data: dict[str, bytes], items: object) -> dict[str, bytes]:
    """A volume's ``items`` (key -> path) or every key as a file of its name."""
    if not isinstance(items, list) or not items:
        return data
    return {str(i.get("path")): data[str(i.get("key"))] for i in items
            if isinstance(i, dict) and str(i.get("key")) in data}  # fmt: skip
