"""Kubernetes ``Status`` responses, and the words of storage errors as Status.

``StatusError`` is what handlers raise for any API error; the handler-errors filter
(``proxy.server.filters``) renders it. ``from_storage_error`` is the table of
``storage.errors`` as Status (kube-apiserver's ``storeerr`` package plus
``apierrors``), same codes, reasons and messages as upstream, word for word; its one
caller is the generic store (``proxy.registry.store``), which applies it per verb::

    NotFound                 → 404 NotFound        pods "x" not found
    AlreadyExists            → 409 AlreadyExists   pods "x" already exists
    Conflict                 → 409 Conflict        Operation cannot be fulfilled on pods "x": the
                                                   object has been modified; please apply ...
    PreconditionFailed       → 409 Conflict        Operation cannot be fulfilled on pods "x":
                                                   Precondition failed: UID in precondition: ...
                               (a DELETE checks its preconditions first with kube's
                               BeforeDelete wording: ``precondition_conflict``)
    InvalidResourceVersion   → 400 BadRequest      (storage's message)
    InvalidContinue          → 400 BadRequest      (storage's message)
    TooLargeResourceVersion  → 504 Timeout         Timeout: Too large resource version: N,
                                                   current: M (+ cause, retryAfterSeconds 1)
    Expired                  → 410 Expired         (storage's message; metadata.continue)
    NotReady                 → 429 TooManyRequests storage is (re)initializing (+ Retry-After)
    Unavailable              → 504 Timeout         Timeout: request did not complete within
                                                   the allotted timeout (no Retry-After)
    CorruptObject            → 500 InternalError   Internal error occurred: StorageError:
                                                   corrupt object, Code: 7, Key: ...
    StoreReadError           → 500 StorageReadError failed to read one or more pods from
                                                   the storage: ... (+ a cause per value)
    InvalidObject            → 409 Conflict        Operation cannot be fulfilled on pods "x":
                                                   StorageError: invalid object, ...
    InternalStorageError     → 500 InternalError   Internal error occurred: ...
      caused by etcd refusing the request (too large, over the gRPC limit, no space)
                             → 500 (no reason)     etcd's own text, as kube passes it on
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from storage import errors as serr
from storage.interfaces import JSONObject

__all__ = [
    "REQUEST_TIMEOUT_MESSAGE",
    "FieldError",
    "StatusError",
    "already_exists",
    "bad_request",
    "conflict",
    "etcd_rejected",
    "expired",
    "from_storage_error",
    "go_quote",
    "internal_error",
    "invalid",
    "method_not_allowed",
    "method_not_supported",
    "not_acceptable",
    "not_found",
    "path_not_found",
    "precondition_conflict",
    "request_entity_too_large",
    "restful_error",
    "service_unavailable",
    "status_body",
    "store_read_error",
    "success_status",
    "timeout",
    "too_many_requests",
    "unexpected_server_response",
    "unknown_error",
    "unsupported_media_type",
]


# WithTimeoutForNonLongRunningRequests' message (k8s.io/apiserver/pkg/server/filters/timeout.go)
REQUEST_TIMEOUT_MESSAGE = "request did not complete within the allotted timeout"

CONFLICT_DETAIL = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def status_body(
    code: int,
    reason: str,
    message: str,
    details: JSONObject | None = None,
    metadata: JSONObject | None = None,
) -> JSONObject:
    """A ``Status`` object of status Failure."""
    body: JSONObject = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": metadata or {},
        "status": "Failure",
        "message": message,
    }
    if reason:  # StatusReasonUnknown is "" and omitted, as Go's omitempty does
        body["reason"] = reason
    if details is not None:  # a non-nil StatusDetails, even empty, is sent as {}
        body["details"] = details
    body["code"] = code
    return body


def success_status(details: JSONObject | None = None) -> JSONObject:
    body: JSONObject = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details:
        body["details"] = details
    return body


class StatusError(Exception):
    """An API error as a ``Status``; ``headers`` go on the response (Retry-After)."""

    def __init__(self, body: JSONObject, headers: dict[str, str] | None = None) -> None:
        super().__init__(body.get("message", ""))
        self.body = body
        self.code = int(body["code"])
        self.headers = dict(headers or {})
        retry = (body.get("details") or {}).get("retryAfterSeconds")
        if retry and (self.code == 429 or self.code >= 500):
            self.headers.setdefault("Retry-After", str(retry))

    @property
    def reason(self) -> str:
        return str(self.body.get("reason", ""))

    @property
    def message(self) -> str:
        return str(self.body.get("message", ""))


def _details(name: str, qualified: str) -> JSONObject:
    """details {name, group, kind} from a GroupResource string like ``deployments.apps``."""
    resource, _, group = qualified.partition(".")
    out: JSONObject = {"name": name}
    if group:
        out["group"] = group
    out["kind"] = resource
    return out


def not_found(qualified: str, name: str) -> StatusError:
    return StatusError(
        status_body(404, "NotFound", f'{qualified} "{name}" not found', _details(name, qualified))
    )


def already_exists(qualified: str, name: str) -> StatusError:
    return StatusError(
        status_body(
            409, "AlreadyExists", f'{qualified} "{name}" already exists', _details(name, qualified)
        )
    )


def conflict(qualified: str, name: str, detail: str) -> StatusError:
    return StatusError(
        status_body(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on {qualified} "{name}": {detail}',
            _details(name, qualified),
        )
    )


def forbidden(qualified: str, name: str, reason: str) -> StatusError:
    """403 as ``errors.NewForbidden``: ``<resource> "<name>" is forbidden: <reason>``."""
    return StatusError(
        status_body(
            403, "Forbidden", f'{qualified} "{name}" is forbidden: {reason}',
            _details(name, qualified),
        )
    )  # fmt: skip


def precondition_conflict(
    group_kind: str, name: str, field: str, wanted: str, actual: str
) -> StatusError:
    """409 of a DELETE whose precondition does not hold for the stored object, as
    ``rest.BeforeDelete`` words it: on the kind (``Pod "p3"``, ``Deployment.apps "d"``),
    ``field`` being ``UID`` or ``ResourceVersion``."""
    consequence = (
        "The object might have been deleted and then recreated"
        if field == "UID"
        else "The object might have been modified"
    )
    detail = (
        f"the {field} in the precondition ({wanted}) does not match the {field} in record "
        f"({actual}). {consequence}"
    )
    return conflict(group_kind, name, detail)


def bad_request(message: str) -> StatusError:
    return StatusError(status_body(400, "BadRequest", message))


@dataclass(frozen=True, slots=True)
class FieldError:
    """One field.Error of apimachinery: ``<field>: <body>`` where body is e.g.
    ``Forbidden: ...``, ``Invalid value: "x": ...``, ``Required value: ...``."""

    type: str  # FieldValueForbidden, FieldValueInvalid, FieldValueRequired, ...
    field: str
    body: str

    def __str__(self) -> str:
        return f"{self.field}: {self.body}"

    @staticmethod
    def forbidden(field: str, detail: str) -> FieldError:
        return FieldError("FieldValueForbidden", field, f"Forbidden: {detail}")

    @staticmethod
    def required(field: str, detail: str) -> FieldError:
        return FieldError("FieldValueRequired", field, f"Required value: {detail}")

    @staticmethod
    def invalid(field: str, value: object, detail: str) -> FieldError:
        return FieldError(
            "FieldValueInvalid", field, f"Invalid value: {_go_quote(value)}: {detail}"
        )

    @staticmethod
    def not_supported(field: str, value: str, supported: Sequence[str]) -> FieldError:
        values = ", ".join(f'"{s}"' for s in supported)
        return FieldError(
            "FieldValueNotSupported",
            field,
            f'Unsupported value: "{value}": supported values: {values}',
        )


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
               "\t": "\\t", "\v": "\\v", "\\": "\\\\", '"': '\\"'}  # fmt: skip


def _go_quote_char(char: str) -> str:
    if char in _GO_ESCAPES:
        return _GO_ESCAPES[char]
    if char.isprintable():
        return char
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a request byte that is not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return (
        f"\\x{code:02x}"
        if code < 0x80
        else f"\\u{code:04x}"
        if code <= 0xFFFF
        else (f"\\U{code:08x}")
    )


def _go_quote(value: object) -> str:
    """Go's ``%q`` of a string (escapes for control and unprintable characters)."""
    if isinstance(value, str):
        if value.isascii() and value.isprintable() and '"' not in value and "\\" not in value:
            return f'"{value}"'  # nothing to escape (the common case, on hot paths)
        return '"' + "".join(_go_quote_char(c) for c in value) + '"'
    if isinstance(value, bool):  # Go prints true/false
        return "true" if value else "false"
    return str(value)


go_quote = _go_quote


def invalid(group_kind: str, name: str, errors: Sequence[FieldError]) -> StatusError:
    """422 Invalid: ``<Kind.group> "<name>" is invalid: <errors>`` (one error bare,
    several as ``[e1, e2]``, as an apimachinery aggregate prints). As
    ``ErrorList.ToAggregate``, the message names each distinct error once; the causes
    keep every error."""
    distinct = list(dict.fromkeys(map(str, errors)))
    text = distinct[0] if len(distinct) == 1 else "[" + ", ".join(distinct) + "]"
    kind, _, group = group_kind.partition(".")
    details: JSONObject = {"name": name} if name else {}
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = [{"reason": e.type, "message": e.body, "field": e.field} for e in errors]
    return StatusError(
        status_body(422, "Invalid", f'{group_kind} "{name}" is invalid: {text}', details)
    )


def unexpected_server_response(code: int, message: str) -> StatusError:
    """apierrors.NewGenericServerResponse(code, ...) as the patch handler uses it: the
    generic message of the code; the server's ``message`` is not shown (kube passes
    isUnexpectedResponse false, so there are no causes) and details are empty."""
    del message  # kept by callers for reading; upstream drops it too
    reason, generic = {
        422: ("Invalid", "the server rejected our request due to an error in our request"),
    }.get(
        code,
        (
            "Unknown",
            f"the server responded with the status code {code} but did not return more information",
        ),
    )
    return StatusError(status_body(code, reason, generic, {}))


# What go-restful's router answers, through kube's serviceErrorHandler
# (apierrors.NewGenericServerResponse): a generic message per code, empty details.
METHOD_NOT_ALLOWED_MESSAGE = "the server does not allow this method on the requested resource"
NOT_FOUND_MESSAGE = "the server could not find the requested resource"


def method_not_allowed() -> StatusError:
    """405: no route serves this method on the path (a POST to an object path, a PUT
    to a collection)."""
    return StatusError(status_body(405, "MethodNotAllowed", METHOD_NOT_ALLOWED_MESSAGE, {}))


def path_not_found() -> StatusError:
    """404: no route serves the path under a served API root (``/api/v1/foos``)."""
    return StatusError(status_body(404, "NotFound", NOT_FOUND_MESSAGE, {}))


def restful_error(code: int, message: str) -> StatusError:
    """A 415 or 406 of go-restful's route matching (``proxy.endpoints.restful_route``):
    its own text, the reason of the code, empty details."""
    reason = {415: "UnsupportedMediaType", 406: "NotAcceptable"}[code]
    return StatusError(status_body(code, reason, message, {}))


def method_not_supported(qualified: str, action: str) -> StatusError:
    return StatusError(
        status_body(
            405,
            "MethodNotAllowed",
            f'{action} is not supported on resources of kind "{qualified}"',
            {"kind": qualified},
        )
    )


def unsupported_media_type(content_type: str, accepted: Sequence[str]) -> StatusError:
    """415 of the handler's own decoder (negotiation.NewUnsupportedMediaTypeError): no
    details. ``content_type`` is the type refused (kept for the caller's wording)."""
    message = "the body of the request was in an unknown format - accepted media types include: "
    return StatusError(status_body(415, "UnsupportedMediaType", message + ", ".join(accepted)))


def not_acceptable(accepted: Sequence[str]) -> StatusError:
    return StatusError(
        status_body(
            406,
            "NotAcceptable",
            "only the following media types are accepted: " + ", ".join(accepted),
        )
    )


def request_entity_too_large(limit: int) -> StatusError:
    return StatusError(
        status_body(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")
    )


def etcd_rejected(message: str) -> StatusError:
    """What kube-apiserver answers when etcd refuses a write itself (``etcdserver:
    request is too large``, a message over the gRPC limit): the etcd store hands etcd's
    error up untranslated and ``ErrorToAPIStatus`` makes it a 500 with its bare text
    and no reason (kubernetes/kubernetes#112152)."""
    return unknown_error(message)


def timeout(
    message: str, retry_after: int = 0, causes: list[JSONObject] | None = None
) -> StatusError:
    details: JSONObject = {}
    if causes:
        details["causes"] = causes
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    return StatusError(status_body(504, "Timeout", f"Timeout: {message}", details))


def expired(message: str, continue_token: str = "") -> StatusError:
    metadata = {"continue": continue_token} if continue_token else {}
    return StatusError(status_body(410, "Expired", message, metadata=metadata))


def too_many_requests(message: str, retry_after: int) -> StatusError:
    return StatusError(
        status_body(429, "TooManyRequests", message, {"retryAfterSeconds": retry_after})
    )


def service_unavailable(message: str, retry_after: int = 1) -> StatusError:
    return StatusError(
        status_body(503, "ServiceUnavailable", message, {"retryAfterSeconds": retry_after})
    )


def unknown_error(message: str, code: int = 500) -> StatusError:
    """What kube-apiserver answers for an error that is not a Status (ErrorToAPIStatus):
    the bare message, reason Unknown (omitted)."""
    return StatusError(status_body(code, "", message))


def internal_error(message: str) -> StatusError:
    return StatusError(
        status_body(
            500,
            "InternalError",
            f"Internal error occurred: {message}",
            {"causes": [{"message": message}]},
        )
    )


def from_storage_error(err: serr.StorageError, qualified: str, name: str = "") -> StatusError:
    """The Status of one storage error for the resource ``qualified`` (``pods``,
    ``deployments.apps``) and object ``name``; called by the generic store only."""
    if isinstance(err, serr.NotFound):
        return not_found(qualified, name)
    if isinstance(err, serr.AlreadyExists):
        return already_exists(qualified, name)
    if isinstance(err, serr.Conflict):
        return conflict(qualified, name, CONFLICT_DETAIL)
    if isinstance(err, serr.PreconditionFailed | serr.InvalidObject):
        return conflict(qualified, name, err.message)
    if isinstance(err, serr.StoreReadError):
        return store_read_error(err, qualified)
    if isinstance(err, serr.InvalidResourceVersion | serr.InvalidContinue):
        return bad_request(err.message)
    if isinstance(err, serr.TooLargeResourceVersion):
        cause = {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
        return timeout(err.message, retry_after=1, causes=[cause])
    if isinstance(err, serr.Expired):
        return expired(err.message, err.continue_token)
    if isinstance(err, serr.NotReady):
        return too_many_requests(err.message, err.retry_after)
    if isinstance(err, serr.Unavailable):
        # what kube-apiserver's clients get while etcd is unreachable: the timeout
        # filter's 504, no Retry-After (see proxy.registry.store)
        return timeout(REQUEST_TIMEOUT_MESSAGE)
    if isinstance(err, serr.RequestRejected):
        return etcd_rejected(err.message)
    return internal_error(err.message)


def store_read_error(err: serr.StoreReadError, qualified: str) -> StatusError:
    """kube-apiserver 1.37's aggregatedStorageError.NewAPIStatusError: a LIST that met
    values it cannot decode (AllowUnsafeMalformedObjectDeletion)."""
    resource, _, group = qualified.partition(".")
    causes: list[JSONObject] = [
        {"reason": "UnexpectedServerResponse", "message": c.message, "field": c.key}
        for c in err.corrupt
    ]
    if err.too_many:
        causes.append(
            {"reason": "FieldValueTooMany", "message": "too many errors, the list is truncated"}
        )
    message = f"failed to read one or more {qualified} from the storage: {err.corrupt[0].message}"
    if len(err.corrupt) > 1:
        message += f" (and {len(err.corrupt) - 1} more)"
    details: JSONObject = {"group": group} if group else {}  # omitempty
    details.update({"kind": resource, "name": "list", "causes": causes})
    return StatusError(status_body(500, "StorageReadError", message, details))
