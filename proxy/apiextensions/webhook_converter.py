"""The ``Webhook`` conversion strategy (apiextensions-apiserver's
``pkg/apiserver/conversion/webhook_converter.go``): objects are sent in a
``ConversionReview`` (``apiextensions.k8s.io/v1``) over HTTPS to the CRD's
``conversion.webhook.clientConfig`` — its ``url``, or its ``service`` as
``https://<name>.<namespace>.svc:<port><path>`` — trusting the ``caBundle`` (else the
system's roots), with upstream's 30 s timeout (``?timeout=30s`` in the URL). A
``service`` is reached as an admission webhook's (``proxy.admission.webhook.client``):
at an address of its Endpoints, through the egress selector's cluster network when one
is configured, the certificate verified for ``<name>.<namespace>.svc``.

The answer is checked as upstream checks it: the uid is the request's, ``result.status``
is ``Success`` (else its message is the error), one converted object per object sent,
each in the desired ``apiVersion`` and of the same kind; metadata other than labels and
annotations is restored from the original. Any failure is a 500 whose message is
``conversion webhook for <group>/<version>, Kind=<Kind> failed: <why>`` (the version the
objects were in), without a reason, as kube-apiserver answers.
"""

from __future__ import annotations

import base64
import ssl
import uuid
from typing import Any

import aiohttp
import orjson
from yarl import URL

from proxy import apierrors
from proxy.admission.interfaces import ClusterTransport, ObjectLookup
from proxy.admission.webhook import client

__all__ = ["WebhookConverter"]

JSON = dict[str, Any]
TIMEOUT_SECONDS = 30
REVIEW = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}


class ConversionError(Exception):
    """Why a conversion failed (the text after ``failed: ``)."""


def _url(client_config: JSON) -> str:
    url = client_config.get("url")
    if url:
        base = str(url)
    else:
        service = client_config.get("service") or {}
        host = f"{service.get('name')}.{service.get('namespace')}.svc"
        base = f"https://{host}:{service.get('port') or 443}{service.get('path') or ''}"
    return base + ("&" if "?" in base else "?") + f"timeout={TIMEOUT_SECONDS}s"


def _ssl_context(client_config: JSON) -> ssl.SSLContext:
    bundle = client_config.get("caBundle")
    if bundle:
        return ssl.create_default_context(cadata=base64.b64decode(bundle).decode())
    return ssl.create_default_context()


def _restore_metadata(original: JSON, converted: JSON) -> JSON:
    """The converted object with the original's metadata, but the labels and
    annotations the webhook set (``restoreObjectMeta``)."""
    meta = dict(original.get("metadata") or {})
    new_meta = converted.get("metadata") or {}
    for key in ("labels", "annotations"):
        if new_meta.get(key):
            meta[key] = new_meta[key]
        else:
            meta.pop(key, None)
    return {**converted, "metadata": meta}


class WebhookConverter:
    """Converts a CRD's objects through its conversion webhook (one HTTP session, closed
    by ``close``)."""

    def __init__(
        self, kind: str, webhook: JSON, lookup: ObjectLookup | None = None,
        cluster: ClusterTransport | None = None,
    ) -> None:  # fmt: skip
        self.kind = kind
        self._client_config = webhook.get("clientConfig") or {}
        self.url = _url(self._client_config)
        self._ssl = _ssl_context(self._client_config)
        self._lookup = lookup
        self._cluster = cluster

    async def convert(self, objects: list[JSON], api_version: str) -> list[JSON]:
        """``objects`` in ``api_version`` (those already in it are left alone)."""
        todo = [i for i, o in enumerate(objects) if o.get("apiVersion") != api_version]
        if not todo:
            return objects
        source = str(objects[todo[0]].get("apiVersion"))
        try:
            converted = await self._review([objects[i] for i in todo], api_version)
        except ConversionError as e:
            raise apierrors.unknown_error(
                f"conversion webhook for {source}, Kind={self.kind} failed: {e}"
            ) from None
        out = list(objects)
        for i, obj in zip(todo, converted, strict=True):
            out[i] = _restore_metadata(objects[i], obj)
        return out

    async def _target(self) -> client.Target:
        """Where to connect: a service's endpoint (resolved on each call, as the
        Endpoints change), else the URL's host."""
        parsed = URL(self.url)
        if self._client_config.get("service") and self._lookup is not None:
            try:
                return await client.resolve(self._client_config, self._lookup)
            except client.WebhookCallError as e:
                raise ConversionError(f'Post "{self.url}": {e}') from None
        host = parsed.host or ""
        return client.Target(self.url, host, parsed.port or 443, host, "")

    async def _post(self, review: JSON) -> JSON:
        target = await self._target()
        parsed = URL(self.url)
        url = URL.build(scheme="https", host=target.connect_host, port=target.connect_port,
                        path=parsed.path or "/", query_string=parsed.query_string)  # fmt: skip
        try:
            raw, status = await client.post(target, url, orjson.dumps(review), TIMEOUT_SECONDS,
                                            self._cluster, self._ssl)  # fmt: skip
        except (aiohttp.ClientError, TimeoutError, OSError) as e:
            raise ConversionError(f'Post "{self.url}": {client.go_error(target, e)}') from None
        if status != 200:
            raise ConversionError(f"conversion webhook responded with status {status}")
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            raise ConversionError(f'Post "{self.url}": {e}') from None
        if not isinstance(body, dict):
            raise ConversionError("no response provided")
        return body

    async def _review(self, objects: list[JSON], api_version: str) -> list[JSON]:
        uid = str(uuid.uuid4())
        request = {"uid": uid, "desiredAPIVersion": api_version, "objects": objects}
        body = await self._post({**REVIEW, "request": request})
        response = body.get("response")
        if not isinstance(response, dict):
            raise ConversionError("no response provided")
        if response.get("uid") != uid:
            raise ConversionError(f"expected response.uid={uid}, got {response.get('uid')}")
        result = response.get("result") or {}
        if result.get("status") != "Success":
            raise ConversionError(str(result.get("message") or "conversion failed"))
        converted = response.get("convertedObjects") or []
        if len(converted) != len(objects):
            raise ConversionError(
                f"expected {len(objects)} converted objects, got {len(converted)}"
            )
        for obj in converted:
            if not isinstance(obj, dict) or obj.get("apiVersion") != api_version:
                got = obj.get("apiVersion") if isinstance(obj, dict) else None
                raise ConversionError(
                    f"invalid converted object: expected apiVersion {api_version}, got {got}"
                )
            if obj.get("kind") != self.kind:
                raise ConversionError(
                    f"invalid converted object: expected kind {self.kind}, got {obj.get('kind')}"
                )
        return converted

    async def close(self) -> None:
        """Nothing held between calls (each call opens its connection, as the egress
        tunnels are one per connection)."""
