"""The ``agnhost`` test image's webhook servers, simulated, so that upstream's e2e suite
can run its admission-webhook and CRD-conversion specs against the lab.

Those specs deploy ``registry.k8s.io/e2e-test-images/agnhost`` with the argument
``webhook`` (admission: ``/always-deny``, ``/add-label``, ``/pods``, ...) or
``crd-conversion-webhook`` (``/crdconvert``), its serving certificate mounted from a
Secret, behind a Service; the API server then calls it at the Service's endpoint — a
pod IP, which only the cluster's network reaches. The lab's simulated kubelets run no
image, so a container of that image and command is served here instead: an HTTPS server
per (pod, container, port) on a private UNIX socket, with the certificate and key the
container's filesystem holds (the mounted Secret), which the simulated konnectivity
server splices a tunnel to pod-IP:port into (:mod:`lab.sim.konnectivity`). Each path
answers as agnhost's Go handlers do (``test/images/agnhost/webhook`` and
``crd-conversion-webhook`` of Kubernetes' source), for AdmissionReview and
ConversionReview in ``v1`` and ``v1beta1``. Nothing else of the image is simulated.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import ssl
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml
from aiohttp import web

from lab.sim.client import JSON
from lab.sim.container_fs import FileSystem, FsError
from lab.sim.containers import container_spec

__all__ = ["AgnhostServers", "agnhost_command"]

log = logging.getLogger("watchcache.sim")

WEBHOOK, CONVERSION = "webhook", "crd-conversion-webhook"
_JSON_PATCH = "JSONPatch"
Admit = Callable[[JSON], Awaitable[JSON | None]]


def agnhost_command(container: JSON) -> str | None:
    """``webhook`` or ``crd-conversion-webhook`` for a container of the agnhost image
    run with that command; None for anything else."""
    image = str(container.get("image") or "")
    if "agnhost" not in image.rsplit("/", 1)[-1]:
        return None
    args = [str(a) for a in (container.get("args") or [])]
    command = args[0] if args else ""
    return command if command in (WEBHOOK, CONVERSION) else None


def _flag(args: list[str], name: str) -> str:
    """A ``--name=value`` or ``--name value`` flag's value ("" when absent)."""
    for i, arg in enumerate(args):
        if arg.startswith(f"--{name}="):
            return arg.split("=", 1)[1]
        if arg == f"--{name}" and i + 1 < len(args):
            return args[i + 1]
    return ""


def _patch(ops: list[JSON]) -> JSON:
    return {"patch": base64.b64encode(orjson.dumps(ops)).decode(), "patchType": _JSON_PATCH}


def _dumps(obj: object) -> str:
    return orjson.dumps(obj).decode()


def _failed(message: str) -> JSON:
    """agnhost's ``toV1AdmissionResponse(err)`` (an AdmissionResponse's ``Result`` is
    its JSON field ``status``)."""
    return {"allowed": False, "status": {"metadata": {}, "message": message}}


def _object(request: JSON, old_on_delete: bool = False) -> JSON:
    key = "oldObject" if old_on_delete and request.get("operation") == "DELETE" else "object"
    obj = request.get(key)
    return obj if isinstance(obj, dict) else {}


def _resource(request: JSON) -> tuple[str, str, str]:
    r = request.get("resource") or {}
    return str(r.get("group") or ""), str(r.get("version") or ""), str(r.get("resource") or "")


def _labels(obj: JSON) -> dict[str, str]:
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}


def _data(obj: JSON) -> dict[str, Any]:
    data = obj.get("data")
    return data if isinstance(data, dict) else {}


async def _always_allow_delay(request: JSON) -> JSON:
    await asyncio.sleep(5)
    return {"allowed": True,
            "status": {"metadata": {}, "message": "this webhook allows all requests"}}  # fmt: skip


async def _always_deny(request: JSON) -> JSON:
    return {"allowed": False,
            "status": {"metadata": {}, "message": "this webhook denies all requests"}}  # fmt: skip


async def _add_label(request: JSON) -> JSON:
    labels = _labels(_object(request))
    answer: JSON = {"allowed": True}
    if not labels:
        answer |= _patch([{"op": "add", "path": "/metadata/labels",
                           "value": {"added-label": "yes"}}])  # fmt: skip
    elif "added-label" not in labels:
        answer |= _patch([{"op": "add", "path": "/metadata/labels/added-label", "value": "yes"}])
    elif labels["added-label"] != "yes":
        answer |= _patch([{"op": "replace", "path": "/metadata/labels/added-label",
                           "value": "yes"}])  # fmt: skip
    return answer


async def _admit_pods(request: JSON) -> JSON:
    if _resource(request) != ("", "v1", "pods"):
        return _failed("expect resource to be { v1 pods}")
    pod = _object(request)
    allowed, message = True, ""
    value = _labels(pod).get("webhook-e2e-test")
    if value == "webhook-disallow":
        allowed, message = False, message + "the pod contains unwanted label; "
    if value == "wait-forever":
        await asyncio.Event().wait()  # never answers, as agnhost: the caller times out
    for c in (pod.get("spec") or {}).get("containers") or []:
        if "webhook-disallow" in str(c.get("name") or ""):
            allowed, message = False, message + "the pod contains unwanted container name; "
    answer: JSON = {"allowed": allowed}
    if not allowed:
        answer["status"] = {"metadata": {}, "message": message.strip()}
    return answer


def _has_container(containers: object, name: str) -> bool:
    return any(isinstance(c, dict) and c.get("name") == name for c in containers or [])  # type: ignore[attr-defined]


def _pod_patch(request: JSON, wanted: Callable[[JSON], bool], ops: list[JSON]) -> JSON | None:
    if _resource(request) != ("", "v1", "pods"):
        return None
    answer: JSON = {"allowed": True}
    if wanted(_object(request)):
        answer |= _patch(ops)
    return answer


async def _mutate_pods(request: JSON) -> JSON | None:
    def wanted(pod: JSON) -> bool:
        init = (pod.get("spec") or {}).get("initContainers")
        return (pod.get("metadata") or {}).get("name") == "webhook-to-be-mutated" and \
            not _has_container(init, "webhook-added-init-container")  # fmt: skip

    ops = [{"op": "add", "path": "/spec/initContainers", "value": [
        {"image": "webhook-added-image", "name": "webhook-added-init-container",
         "resources": {}}]}]  # fmt: skip
    return _pod_patch(request, wanted, ops)


def _mutate_pods_sidecar(sidecar_image: str) -> Admit:
    async def admit(request: JSON) -> JSON | None:
        if not sidecar_image:
            return {"allowed": False, "status": {
                "metadata": {}, "status": "Failure", "code": 500,
                "message": "No image specified by the sidecar-image parameter"}}  # fmt: skip
        ops = [{"op": "add", "path": "/spec/containers/-", "value": {
            "image": sidecar_image, "name": "webhook-added-sidecar", "resources": {}}}]  # fmt: skip
        return _pod_patch(request, lambda pod: not _has_container(
            (pod.get("spec") or {}).get("containers"), "webhook-added-sidecar"), ops)  # fmt: skip

    return admit


async def _deny_attachment(request: JSON) -> JSON:
    if request.get("name") != "to-be-attached-pod":
        return {"allowed": True}
    if _resource(request) != ("", "v1", "pods"):
        return _failed("expect resource to be { v1 pods}")
    if request.get("subResource") != "attach":
        return _failed(f"expect subresource to be attach, got {request.get('subResource')}")
    options = _object(request)
    if not options.get("stdin") or options.get("container") != "container1":
        return {"allowed": True}
    return {"allowed": False, "status": {
        "metadata": {}, "message": "attaching to pod 'to-be-attached-pod' is not allowed"}}


def _deny_data(what: str) -> Admit:
    """``admitConfigMaps`` / ``admitCustomResource``: refuse a ``webhook-e2e-test`` key of
    ``webhook-disallow`` on create and update, of ``webhook-nondeletable`` on delete."""

    async def admit(request: JSON) -> JSON | None:
        if what == "configmap" and _resource(request) != ("", "v1", "configmaps"):
            return None
        op, value = request.get("operation"), _data(_object(request, True)).get("webhook-e2e-test")
        answer: JSON = {"allowed": True}
        if value == "webhook-disallow" and op in ("CREATE", "UPDATE"):
            reason = ("the configmap contains unwanted key and value" if what == "configmap"
                      else "the custom resource contains unwanted data")  # fmt: skip
            answer = {"allowed": False, "status": {"metadata": {}, "reason": reason}}
        if value == "webhook-nondeletable" and op == "DELETE":
            answer = {"allowed": False, "status": {"metadata": {}, "reason": (
                f"the {'configmap' if what == 'configmap' else 'custom resource'} cannot be "
                "deleted because it contains unwanted key and value")}}  # fmt: skip
        return answer

    return admit


def _mutate_data(what: str) -> Admit:
    """``mutateConfigmaps`` / ``mutateCustomResource``: two stages of data keys."""

    async def admit(request: JSON) -> JSON | None:
        if what == "configmap" and _resource(request) != ("", "v1", "configmaps"):
            return None
        data = _data(_object(request))
        answer: JSON = {"allowed": True}
        if data.get("mutation-start") == "yes":
            answer |= _patch([{"op": "add", "path": "/data/mutation-stage-1", "value": "yes"}])
        if data.get("mutation-stage-1") == "yes":
            answer |= _patch([{"op": "add", "path": "/data/mutation-stage-2", "value": "yes"}])
        return answer

    return admit


async def _admit_crd(request: JSON) -> JSON:
    group, version, resource = _resource(request)
    if group != "apiextensions.k8s.io" or version not in ("v1", "v1beta1") or \
            resource != "customresourcedefinitions":  # fmt: skip
        return _failed("expect resource to be one of [apiextensions.k8s.io/v1beta1, "
                       "Resource=customresourcedefinitions apiextensions.k8s.io/v1, "
                       "Resource=customresourcedefinitions] but got "
                       f"{group}/{version}, Resource={resource}")  # fmt: skip
    answer: JSON = {"allowed": True}
    if _labels(_object(request)).get("webhook-e2e-test") == "webhook-disallow":
        denied = {"metadata": {}, "message": "the crd contains unwanted label"}
        answer = {"allowed": False, "status": denied}
    return answer


def _admission_paths(args: list[str]) -> dict[str, Admit]:
    return {
        "/always-allow-delay-5s": _always_allow_delay, "/always-deny": _always_deny,
        "/add-label": _add_label, "/pods": _admit_pods, "/pods/attach": _deny_attachment,
        "/mutating-pods": _mutate_pods,
        "/mutating-pods-sidecar": _mutate_pods_sidecar(_flag(args, "sidecar-image")),
        "/configmaps": _deny_data("configmap"), "/mutating-configmaps": _mutate_data("configmap"),
        "/custom-resource": _deny_data("custom resource"),
        "/mutating-custom-resource": _mutate_data("custom resource"), "/crd": _admit_crd,
    }  # fmt: skip


def _admission_handler(admit: Admit) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        if request.headers.get("Content-Type") != "application/json":
            return web.Response()  # agnhost logs it and answers nothing
        try:
            review = orjson.loads(body)
        except orjson.JSONDecodeError as e:
            return web.Response(status=400, text=f"Request could not be decoded: {e}\n")
        api_version = review.get("apiVersion") if isinstance(review, dict) else None
        if api_version not in ("admission.k8s.io/v1", "admission.k8s.io/v1beta1") or \
                review.get("kind") != "AdmissionReview":  # fmt: skip
            return web.Response(status=400, text="Unsupported group version kind\n")
        req = review.get("request") if isinstance(review.get("request"), dict) else {}
        answer = await admit(req)
        if answer is None:  # agnhost dereferences a nil response: the connection drops
            raise web.HTTPInternalServerError()
        response = {"uid": req.get("uid", ""), **answer}
        answered = {"kind": "AdmissionReview", "apiVersion": api_version, "response": response}
        return web.json_response(answered, dumps=_dumps)

    return handle


def _convert(obj: JSON, to: str) -> tuple[JSON | None, str]:
    """agnhost's ``convertExampleCRD``: (the converted object, or None and why)."""
    source = obj.get("apiVersion")
    if to == source:
        return None, f"conversion from a version to itself should not call the webhook: {to}"
    out = dict(obj)
    if source == "stable.example.com/v1" and to == "stable.example.com/v2":
        if "hostPort" in out:
            parts = str(out.pop("hostPort")).split(":")
            if len(parts) != 2:
                return None, f"invalid hostPort value `{obj['hostPort']}`"
            out["host"], out["port"] = parts
    elif source == "stable.example.com/v2" and to == "stable.example.com/v1":
        if "host" in out or "port" in out:
            out["hostPort"] = f"{out.pop('host', '')}:{out.pop('port', '')}"
    elif source in ("stable.example.com/v1", "stable.example.com/v2"):
        return None, f'unexpected conversion version "{to}"'
    else:
        return None, f'unexpected conversion version "{source}"'
    out["apiVersion"] = to
    return out, ""


async def _crd_convert(request: web.Request) -> web.StreamResponse:
    body = await request.read()
    content_type = request.headers.get("Content-Type", "")
    try:
        if content_type == "application/json":
            review = orjson.loads(body)
        elif content_type == "application/yaml":
            review = yaml.safe_load(body)
        else:
            return web.Response(status=400, text=f"invalid Content-Type header `{content_type}`\n")
    except (orjson.JSONDecodeError, yaml.YAMLError) as e:
        return web.Response(status=400, text=f"failed to deserialize body with error {e}\n")
    api_version = review.get("apiVersion") if isinstance(review, dict) else None
    if api_version not in ("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1"):
        return web.Response(status=400, text="Unsupported group version kind\n")
    req = review.get("request") if isinstance(review.get("request"), dict) else {}
    desired = str(req.get("desiredAPIVersion") or "")
    converted, failure = [], ""
    for obj in req.get("objects") or []:
        out, failure = _convert(obj if isinstance(obj, dict) else {}, desired)
        if out is None:
            break
        converted.append(out)
    result = ({"metadata": {}, "status": "Failure", "message": failure} if failure
              else {"metadata": {}, "status": "Success"})  # fmt: skip
    response: JSON = {"uid": req.get("uid", ""), "result": result}
    if not failure:
        response["convertedObjects"] = converted
    answer = {"kind": "ConversionReview", "apiVersion": api_version,
              "request": {"uid": "", "desiredAPIVersion": "", "objects": None},
              "response": response}  # fmt: skip
    return web.json_response(answer, dumps=_dumps)


async def _readyz(request: web.Request) -> web.StreamResponse:
    return web.Response(text="ok")


def _app(command: str, args: list[str]) -> web.Application:
    app = web.Application()
    if command == WEBHOOK:
        for path, admit in _admission_paths(args).items():
            app.router.add_post(path, _admission_handler(admit))
    else:
        app.router.add_post("/crdconvert", _crd_convert)
    app.router.add_get("/readyz", _readyz)
    return app


def _tls(fs: FileSystem, args: list[str]) -> ssl.SSLContext:
    """The server's TLS from the files its flags name in the container's filesystem."""
    cert = fs.read(_flag(args, "tls-cert-file"))
    key = fs.read(_flag(args, "tls-private-key-file"))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory(prefix="agnhost-") as tmp:  # load_cert_chain reads files
        cert_path, key_path = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
        cert_path.write_bytes(bytes(cert))
        key_path.touch(mode=0o600)
        key_path.write_bytes(bytes(key))
        ctx.load_cert_chain(cert_path, key_path)
    return ctx


@dataclass
class AgnhostServers:
    """The running simulated agnhost servers, by (pod uid, container, run, port); each
    on a UNIX socket in ``directory``. ``filesystem(pod, container)`` is the container's
    filesystem (the node runtime's)."""

    filesystem: Callable[[JSON, str], Awaitable[FileSystem]]
    directory: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="watchcache-agnhost-"))
    _runners: dict[tuple[str, str, str, int], tuple[web.AppRunner, str]] = field(
        default_factory=dict)  # fmt: skip
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _serial: int = 0

    async def prune(self, live_uids: set[str]) -> None:
        """Stop the servers of pods that are gone."""
        for key in [k for k in self._runners if k[0] not in live_uids]:
            runner, path = self._runners.pop(key)
            await runner.cleanup()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)

    async def socket_for(self, pod: JSON, container: str, port: int) -> str | None:
        """The socket of the server that pod's container runs on ``port`` (started on
        first use); None when it runs none (not agnhost, another port, no certificate)."""
        spec = container_spec(pod, container) or {}
        command = agnhost_command(spec)
        args = [str(a) for a in spec.get("args") or []]
        if command is None or str(port) != (_flag(args, "port") or "443"):
            return None
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        run = next((str(s.get("containerID") or "") for s in statuses
                    if s.get("name") == container), "")  # fmt: skip
        key = (str((pod.get("metadata") or {}).get("uid")), container, run, port)
        async with self._lock:
            found = self._runners.get(key)
            if found is None:
                found = await self._start(key, pod, container, command, args)
                if found is None:
                    return None
        return found[1]

    async def _start(
        self, key: tuple[str, str, str, int], pod: JSON, container: str, command: str,
        args: list[str],
    ) -> tuple[web.AppRunner, str] | None:  # fmt: skip
        try:
            tls = _tls(await self.filesystem(pod, container), args)
        except (FsError, ssl.SSLError, OSError) as e:
            log.info("agnhost %s in %s: no serving certificate: %s", command, key[:2], e)
            return None
        runner = web.AppRunner(_app(command, args), access_log=None)
        await runner.setup()
        self._serial += 1
        path = os.path.join(self.directory, f"{self._serial}.sock")
        await web.UnixSite(runner, path, ssl_context=tls).start()
        self._runners[key] = (runner, path)
        log.info("agnhost %s serving for pod %s, container %s, port %d", command, key[0],
                 container, key[3])  # fmt: skip
        return runner, path

    async def close(self) -> None:
        for runner, path in self._runners.values():
            await runner.cleanup()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        self._runners.clear()
        with contextlib.suppress(OSError):
            os.rmdir(self.directory)
