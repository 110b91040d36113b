"""The two webhook plugins (kube's ``webhook/mutating`` and ``webhook/validating``
dispatchers): which hooks a request goes to, calling them, and what their answers do.

- Configurations are taken sorted by name, their webhooks in order (as upstream).
- A hook is called when its rules match (``matchPolicy``), its namespace and object
  selectors match and its ``matchConditions`` hold (CEL, ``match_conditions``).
- A dry-run request to a hook whose ``sideEffects`` is not ``None``/``NoneOnDryRun``
  is 400 ``admission webhook "x" does not support dry run``.
- A call that fails (down, slower than ``timeoutSeconds``, garbage, a wrong review) is
  500 ``Internal error occurred: failed calling webhook "x": ...`` under
  ``failurePolicy: Fail`` (the default), and ignored under ``Ignore`` with the
  ``failed-open.*`` audit annotation.
- A denial is ``admission webhook "x" denied the request: <message>`` with the
  code and reason the webhook gave (400 when it gave none below 400).
- Mutating hooks run one after another; a JSONPatch answer changes the object. A hook
  with ``reinvocationPolicy: IfNeeded`` is called once more when a later hook changed
  the object. Validating hooks run concurrently; the first rejection is answered.
- Warnings go to the response, ``auditAnnotations`` to the request's audit annotations
  as ``<webhook name>/<key>``.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from dataclasses import dataclass
from typing import Any

import jsonpatch
import orjson

from proxy import apierrors
from proxy.admission.attributes import Attributes
from proxy.admission.chain import PluginDeps
from proxy.admission.interfaces import Plugin
from proxy.admission.webhook import client, match_conditions, rules
from proxy.admission.webhook.review import (
    CallFailed,
    InvalidResponse,
    create_review,
    verify_response,
)

__all__ = ["MutatingWebhook", "ValidatingWebhook", "denied"]

log = logging.getLogger("watchcache.admission")

JSON = dict[str, Any]
SYNC_WAIT_SECONDS = 10.0


@dataclass(frozen=True)
class Hook:
    configuration: str
    index: int
    spec: JSON

    @property
    def name(self) -> str:
        return str(self.spec.get("name") or "")

    @property
    def timeout(self) -> float:
        return float(self.spec.get("timeoutSeconds") or 10)

    @property
    def ignore_failures(self) -> bool:
        return self.spec.get("failurePolicy") == "Ignore"


def denied(name: str, status: JSON | None) -> apierrors.StatusError:
    """kube's ``webhookerrors.ToStatusErr``."""
    result = dict(status or {})
    prefix = f'admission webhook "{name}" denied the request'
    code = int(result.get("code") or 0)
    if result.get("message"):
        message = f"{prefix}: {result['message']}"
    elif result.get("reason"):
        message = f"{prefix}: {result['reason']}"
    else:
        message = f"{prefix} without explanation"
    details = result.get("details")
    return apierrors.StatusError(apierrors.status_body(
        max(code, 400), str(result.get("reason") or ""), message,
        details if isinstance(details, dict) else None,
    ))  # fmt: skip


class _WebhookPlugin(Plugin):
    plural = ""
    is_mutating = False
    kind_word = ""

    def __init__(self, deps: PluginDeps) -> None:
        super().__init__(deps)
        assert deps.sources is not None, "built without the configuration source"
        self.source = deps.sources
        self.default = deps.default
        self.cluster = deps.cluster

    async def _namespace(self, attrs: Attributes) -> JSON | None:
        if not attrs.namespace:
            return None
        ns = await self.lookup.get("", "namespaces", "", attrs.namespace)
        return ns or await self.lookup.get("", "namespaces", "", attrs.namespace, fresh=True)

    async def matching_hooks(self, attrs: Attributes) -> list[Hook]:
        if rules.is_exempt_admission_configuration(attrs):
            return []
        if not self.source.synced.is_set():
            async with asyncio.timeout(SYNC_WAIT_SECONDS):
                await self.source.synced.wait()
        hooks: list[Hook] = []
        namespace: JSON | None = None
        namespace_read = False
        index = 0
        for config in self.source.items(self.plural):
            for spec in config.get("webhooks") or ():
                hook = Hook(str(config["metadata"]["name"]), index, spec)
                index += 1
                policy = str(spec.get("matchPolicy") or "Equivalent")
                if not rules.rules_match(spec.get("rules"), attrs, policy):
                    continue
                if not rules.object_selector_matches(spec.get("objectSelector"), attrs):
                    continue
                if spec.get("namespaceSelector") and not namespace_read:
                    namespace, namespace_read = await self._namespace(attrs), True
                if not rules.namespace_selector_matches(spec.get("namespaceSelector"), attrs,
                                                        namespace):
                    continue
                hooks.append(hook)
        return hooks

    def _check_dry_run(self, hook: Hook, attrs: Attributes) -> None:
        if attrs.dry_run and hook.spec.get("sideEffects") not in ("None", "NoneOnDryRun"):
            raise apierrors.bad_request(f'admission webhook "{hook.name}" does not support dry run')

    async def _ask(self, hook: Hook, attrs: Attributes) -> JSON:
        """The webhook's ``response``; CallFailed with upstream's reason."""
        review = create_review(attrs)
        uid = review["request"]["uid"]
        try:
            target = await client.resolve(hook.spec.get("clientConfig") or {}, self.lookup)
            answer = await client.call(target, review, hook.timeout, self.cluster)
        except client.WebhookCallError as e:
            raise CallFailed(f"failed to call webhook: {e}") from None
        try:
            return verify_response(uid, self.is_mutating, answer)
        except InvalidResponse as e:
            raise CallFailed(f"received invalid webhook response: {e}") from None

    async def call_hook(self, hook: Hook, attrs: Attributes, round_: int) -> JSON | None:
        """Ask one hook; None when its failure is ignored (``failurePolicy: Ignore``)."""
        try:
            if not await match_conditions.hold(hook.spec, attrs):
                return None
            response = await self._ask(hook, attrs)
        except CallFailed as e:
            message = f'failed calling webhook "{hook.name}": {e}'
            if hook.ignore_failures:
                log.warning("%s (failurePolicy Ignore)", message)
                attrs.add_annotation(
                    f"failed-open.{self.kind_word}.webhook.admission.k8s.io/"
                    f"round_{round_}_index_{hook.index}", hook.name)
                return None
            raise apierrors.internal_error(message) from None
        for warning in response.get("warnings") or ():
            attrs.add_warning(str(warning))
        for key, value in (response.get("auditAnnotations") or {}).items():
            attrs.add_annotation(f"{hook.name}/{key}", str(value))
        if not response.get("allowed"):
            raise denied(hook.name, response.get("status"))
        return response


class ValidatingWebhook(_WebhookPlugin):
    name = "ValidatingAdmissionWebhook"
    validating = True
    plural = "validatingwebhookconfigurations"
    kind_word = "validating"

    async def validate(self, attrs: Attributes) -> None:
        hooks = await self.matching_hooks(attrs)
        for hook in hooks:
            self._check_dry_run(hook, attrs)
        results = await asyncio.gather(
            *(self.call_hook(hook, attrs, 0) for hook in hooks), return_exceptions=True
        )
        for result in results:
            if isinstance(result, BaseException):
                raise result


class MutatingWebhook(_WebhookPlugin):
    name = "MutatingAdmissionWebhook"
    mutating = True
    plural = "mutatingwebhookconfigurations"
    is_mutating = True
    kind_word = "mutating"

    async def admit(self, attrs: Attributes) -> None:
        hooks = await self.matching_hooks(attrs)
        last_change = -1  # position of the last hook that changed the object
        called_at: dict[int, int] = {}
        for position, hook in enumerate(hooks):
            self._check_dry_run(hook, attrs)
            called_at[position] = position
            if await self._mutate(hook, attrs, 0):
                last_change = position
        for position, hook in enumerate(hooks):  # reinvocation, once
            if hook.spec.get("reinvocationPolicy") != "IfNeeded":
                continue
            if last_change > called_at[position]:
                await self._mutate(hook, attrs, 1)

    async def _mutate(self, hook: Hook, attrs: Attributes, round_: int) -> bool:
        response = await self.call_hook(hook, attrs, round_)
        if response is None:
            return False
        patch = response.get("patch")
        changed = False
        if patch and attrs.object is not None:
            try:
                ops = orjson.loads(base64.b64decode(patch))
                patched = jsonpatch.apply_patch(attrs.object, ops)
            except (ValueError, jsonpatch.JsonPatchException, jsonpatch.JsonPointerException,
                    TypeError) as e:
                raise apierrors.internal_error(str(e)) from None
            if self.default is not None and isinstance(patched, dict):
                self.default(*attrs.kind, patched)  # as upstream decodes the patched object
            changed = patched != attrs.object
            attrs.object = patched
        annotation = {"configuration": hook.configuration, "webhook": hook.name,
                      "mutated": changed}
        attrs.add_annotation(
            f"mutation.webhook.admission.k8s.io/round_{round_}_index_{hook.index}",
            orjson.dumps(annotation).decode())
        return changed
