"""What a mutating webhook returns is defaulted, as kube-apiserver decodes (and so
defaults) the patched object: a container port the webhook adds gets its protocol."""

from __future__ import annotations

import asyncio
import base64
from typing import Any, cast

import orjson

from proxy.admission.attributes import Attributes
from proxy.admission.interfaces import PluginDeps
from proxy.admission.webhook.dispatcher import Hook, MutatingWebhook
from proxy.kube.defaulting import default_object
from proxy.kube.resources import build_registry

_ADD_PORT = [{"op": "add", "path": "/spec/containers/0/ports",
              "value": [{"containerPort": 80}]}]  # fmt: skip


def _plugin(default: Any) -> MutatingWebhook:
    deps = PluginDeps(lookup=cast(Any, None), sources=cast(Any, object()), default=default)
    plugin = MutatingWebhook(deps)

    async def call_hook(hook: Hook, attrs: Attributes, round_: int) -> dict[str, Any]:
        return {"allowed": True, "patch": base64.b64encode(orjson.dumps(_ADD_PORT)).decode()}

    plugin.call_hook = call_hook  # type: ignore[method-assign]
    return plugin


def _mutated(plugin: MutatingWebhook) -> dict[str, Any]:
    pods = build_registry().get("", "v1", "pods")
    assert pods is not None
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "nginx:1", "imagePullPolicy":
                                    "IfNotPresent"}]}}  # fmt: skip
    attrs = Attributes(resource=pods, operation="CREATE", namespace="ns", name="p", object=pod)
    hook = Hook("config", 0, {"name": "add-port.example.com"})
    assert asyncio.run(plugin._mutate(hook, attrs, 0))
    assert attrs.object is not None
    return attrs.object


def test_a_webhooks_patch_result_is_defaulted() -> None:
    [port] = _mutated(_plugin(default_object))["spec"]["containers"][0]["ports"]
    assert port == {"containerPort": 80, "protocol": "TCP"}


def test_without_a_defaulter_the_patch_is_kept_as_sent() -> None:
    [port] = _mutated(_plugin(None))["spec"]["containers"][0]["ports"]
    assert port == {"containerPort": 80}
