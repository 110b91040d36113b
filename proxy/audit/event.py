"""Building ``audit.k8s.io/v1`` Events (upstream's ``audit/request.go``): the fields
in upstream's order, each stage's timestamp, the response status, and the request and
response objects.

The objects are carried as ``RawObject`` (the bytes the handler read or wrote) and
turned into JSON only in the writer's thread (``materialize``): the event loop never
parses a large LIST for the audit log. YAML and protobuf bodies are converted to
JSON; anything else has no object.
"""

from __future__ import annotations

import datetime
import random
import time
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from proxy.endpoints.decoding import decode_structured
from proxy.endpoints.negotiation import YAML_TYPE
from proxy.request.request_info import RequestInfo
from proxy.request.user import UserInfo
from storage import codec
from storage.codec import PROTOBUF_MAGIC

__all__ = [
    "CREATED_BODY",
    "AuditEvent",
    "RawObject",
    "materialize",
    "new_audit_id",
    "timestamp",
    "user_api",
]

JSON = dict[str, Any]


_second: list[Any] = [-1, ""]  # the last whole second formatted, and its text


def timestamp(now_ns: int | None = None) -> str:
    """RFC 3339 with microseconds (UTC), as upstream's MicroTime; the date part is
    formatted once a second (strftime costs more than the rest of an event)."""
    second, ns = divmod(time.time_ns() if now_ns is None else now_ns, 1_000_000_000)
    if second != _second[0]:
        text = datetime.datetime.fromtimestamp(second, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _second[:] = [second, text]
    return f"{_second[1]}.{ns // 1000:06d}Z"


def new_audit_id() -> str:
    """A random (version 4) UUID's text, without uuid.UUID's cost."""
    h = f"{random.getrandbits(128):032x}"
    variant = "89ab"[int(h[16], 16) & 3]
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{variant}{h[17:20]}-{h[20:]}"


@dataclass(frozen=True)
class RawObject:
    """An object's encoded bytes, decoded in the writer's thread."""

    data: bytes
    content_type: str
    omit_managed_fields: bool

    def decode(self) -> Any:
        if self.data.startswith(PROTOBUF_MAGIC):  # kubectl's writes, protobuf answers
            obj: Any = codec.decode_object("audit", self.data)
        elif self.content_type.endswith("yaml"):
            # the request's own limits (100,000 nodes): a hostile body is left out
            obj = decode_structured(self.data, YAML_TYPE)
        elif "json" in self.content_type or self.data[:1] in (b"{", b"["):
            if not self.omit_managed_fields and b"\n" not in self.data:
                return orjson.Fragment(self.data)  # our own compact JSON: spliced as is
            obj = orjson.loads(self.data)
        else:
            return None
        if self.omit_managed_fields:
            _drop_managed_fields(obj)
        return obj


def _drop_managed_fields(obj: Any) -> None:
    if not isinstance(obj, dict):
        return
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    for item in obj.get("items") or ():
        _drop_managed_fields(item)


CREATED_BODY = "_createdBody"  # internal: removed by ``materialize``
_REF_ORDER = ("resource", "namespace", "name", "apiGroup", "apiVersion", "subresource")


# a YAML create body larger than this is not read for its name: the pure-Python
# parser costs ~60 µs a node, and a hostile 3 MiB body (1.5 M nodes) held the writer
# 90 s; the request's own decoding refused it (too many nodes) or named the object
_NAMED_YAML_BYTES = 64 * 1024


def _created_name(raw: RawObject) -> str:
    """The name a create's body asks for, or "" (undecodable, a YAML body too large to
    read cheaply, or ``metadata`` or its name of any other type: the request was
    refused, the objectRef stays as it is)."""
    if len(raw.data) > _NAMED_YAML_BYTES and raw.data[:1] != b"{" and (
        raw.content_type.endswith("yaml")
    ):
        return ""
    try:
        obj = (
            codec.decode_object("audit", raw.data)
            if raw.data[:1] != b"{"
            else orjson.loads(raw.data)
        )
    except Exception:
        return ""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else ""


def materialize(event: JSON) -> JSON:
    """The event with its RawObjects decoded (or left out when undecodable), and a
    create's objectRef completed with the created object's name."""
    created = event.pop(CREATED_BODY, None)
    if isinstance(created, RawObject):
        name = _created_name(created)
        if name:
            ref = {**event["objectRef"], "name": name}
            event["objectRef"] = {k: ref[k] for k in _REF_ORDER if k in ref}
    for key in ("requestObject", "responseObject"):
        raw = event.get(key)
        if isinstance(raw, RawObject):
            try:
                decoded = raw.decode()
            except Exception:  # any undecodable body (a protobuf List...): left out
                decoded = None
            if decoded is None:
                del event[key]
            else:
                event[key] = decoded
    return event


def _source_ips(request: web.Request) -> list[str]:
    """X-Forwarded-For, then X-Real-Ip, then the peer, without repeats (upstream's
    ``utilnet.SourceIPs``)."""
    headers = request.headers
    if "X-Forwarded-For" not in headers and "X-Real-Ip" not in headers:
        peer = request.remote  # a direct client: its address alone
        return [peer] if peer else []
    ips: list[str] = []
    for part in request.headers.get("X-Forwarded-For", "").split(","):
        if part.strip():
            ips.append(part.strip())
    real = request.headers.get("X-Real-Ip", "").strip()
    if real and real not in ips:
        ips.append(real)
    peer = request.remote or ""
    if peer and peer not in ips:
        ips.append(peer)
    return ips


def _object_ref(info: RequestInfo) -> JSON | None:
    if not info.is_resource_request:
        return None
    ref: JSON = {"resource": info.resource}
    if info.namespace:
        ref["namespace"] = info.namespace
    if info.name:
        ref["name"] = info.name
    if info.group:
        ref["apiGroup"] = info.group
    if info.version:
        ref["apiVersion"] = info.version
    if info.subresource:
        ref["subresource"] = info.subresource
    return ref


# The parts of an event that repeat from request to request are built once and shared
# by the events that carry them: a user's ``user`` and a success's ``responseStatus``.
# Nothing writes into an event's parts after it is built (the writer's ``materialize``
# replaces only the objects and objectRef, ``valid_utf8`` copies), so sharing them
# changes no byte of the log; it saves their dicts and lists, and the collections of
# the garbage collector that every few hundred new containers cost.
_USERS: dict[tuple[str, str, tuple[str, ...]], JSON] = {}
_USERS_MAX = 1024  # distinct users held; past it the cache starts over
_STATUSES: dict[int, JSON] = {}


def user_api(user: UserInfo) -> JSON:
    """``user.to_api()``, shared between the events of the same user (never mutate it)."""
    if user.extra:
        return user.to_api()  # rare (impersonation, webhooks' extra): not cached
    key = (user.name, user.uid, user.groups)
    found = _USERS.get(key)
    if found is None:
        if len(_USERS) >= _USERS_MAX:
            _USERS.clear()
        found = _USERS[key] = user.to_api()
    return found


def _plain_status(code: int) -> JSON:
    """``{"metadata":{},"code":N}``, shared (never mutate it)."""
    status = _STATUSES.get(code)
    if status is None:
        status = _STATUSES[code] = {"metadata": {}, "code": code}
    return status


class AuditEvent:
    """One request's audit record; ``at(stage)`` is the Event for a stage."""

    __slots__ = (
        "annotations", "audit_id", "created_body", "impersonated", "level", "object_ref",
        "omit_managed_fields", "received", "request_object", "request_uri",
        "response_object", "response_status", "source_ips", "user", "user_agent", "verb",
    )  # fmt: skip

    def __init__(self, request: web.Request, info: RequestInfo, user: UserInfo, level: str,
                 audit_id: str, omit_managed_fields: bool) -> None:  # fmt: skip
        self.level = level
        self.audit_id = audit_id
        self.request_uri = request.raw_path
        self.verb = info.verb
        self.user = user_api(user)
        self.impersonated: JSON | None = None
        self.source_ips = _source_ips(request)
        self.user_agent = request.headers.get("User-Agent", "")
        self.object_ref = _object_ref(info)
        self.received = timestamp()
        self.response_status: JSON | None = None
        self.request_object: RawObject | None = None
        self.response_object: RawObject | None = None
        self.annotations: dict[str, str] = {}
        self.omit_managed_fields = omit_managed_fields
        self.created_body: RawObject | None = None

    def at(self, stage: str) -> JSON:
        event: JSON = {
            "kind": "Event",
            "apiVersion": "audit.k8s.io/v1",
            "level": self.level,
            "auditID": self.audit_id,
            "stage": stage,
            "requestURI": self.request_uri,
            "verb": self.verb,
            "user": self.user,
        }
        if self.impersonated is not None:
            event["impersonatedUser"] = self.impersonated
        event["sourceIPs"] = self.source_ips
        if self.user_agent:
            event["userAgent"] = self.user_agent
        if self.object_ref is not None:
            event["objectRef"] = self.object_ref
        if self.response_status is not None:
            event["responseStatus"] = self.response_status
        if self.request_object is not None:
            event["requestObject"] = self.request_object
        if self.response_object is not None:
            event["responseObject"] = self.response_object
        if self.created_body is not None and stage != "RequestReceived":
            event[CREATED_BODY] = self.created_body
        event["requestReceivedTimestamp"] = self.received
        event["stageTimestamp"] = self.received if stage == "RequestReceived" else timestamp()
        if self.annotations:
            event["annotations"] = self.annotations  # a fresh dict per stage (the filter's)
        return event

    def set_status(self, code: int, body: bytes | None, content_type: str) -> None:
        """``{"metadata":{},"code":N}``, or for a failure the Status the client got
        (without kind and apiVersion), as upstream."""
        status = _plain_status(code)
        if code >= 300 and body and "json" in content_type and body[:1] == b"{":
            try:
                decoded = orjson.loads(body)
            except ValueError:
                decoded = None
            if isinstance(decoded, dict) and decoded.get("kind") == "Status":
                status = {k: v for k, v in decoded.items() if k not in ("kind", "apiVersion")}
        self.response_status = status

    def set_request_object(self, body: bytes, content_type: str, info: RequestInfo) -> None:
        """The body as ``requestObject`` (Request and RequestResponse levels)."""
        if body:
            self.request_object = RawObject(body, content_type, self.omit_managed_fields)

    def name_created_object(self, body: bytes, content_type: str) -> None:
        """A create's objectRef names the object it creates (upstream fills it in from
        the decoded object): the name is read from the body in the writer's thread."""
        if body and self.object_ref is not None and "name" not in self.object_ref:
            self.created_body = RawObject(body, content_type, False)
