"""An authorization decision with its metrics, and its 403 (what upstream's
``WithAuthorization`` filter, impersonation and the reviews share; the filter itself is
``proxy.endpoints.filters.authorization``).

On the secure port every request is authorized with the user the authentication filter
stored and the request's RequestInfo (computed once by the request-info filter); anything
but Allow is 403 Forbidden with upstream's message::

    pods is forbidden: User "alice" cannot list resource "pods" in API group ""
        in the namespace "default"
    nodes "n1" is forbidden: User "alice" cannot get resource "nodes" in API group ""
        at the cluster scope
    forbidden: User "system:anonymous" cannot get path "/metrics"

(each on one line), followed by ``: <reason>`` when the authorizers gave one. The plain
port skips the filter (its user is system:masters). Metrics:
``authorization_attempts_total{result}``, ``authorization_duration_seconds{result}``, and
``apiserver_authorization_decisions_total{type,name,decision}``.
"""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import Counter, Histogram

from proxy import apierrors
from proxy.apierrors import go_quote
from proxy.authorization.authorizer import Attributes, Decision
from proxy.authorization.modes import Union

__all__ = [
    "AUDIT_DECISION",
    "DECISION_ANNOTATION",
    "REASON_ANNOTATION",
    "authorize",
    "forbidden",
    "forbidden_message",
]

_BUCKETS = tuple(0.001 * 2**i for i in range(15))
ATTEMPTS = Counter(
    "authorization_attempts_total",
    "Counter of authorization attempts broken down by result. It can be either 'allowed', "
    "'denied', 'no-opinion' or 'error'.",
    ("result",),
)
DURATION = Histogram(
    "authorization_duration_seconds",
    "Authorization duration in seconds broken out by result.",
    ("result",),
    buckets=_BUCKETS,
)
DECISIONS = Counter(
    "apiserver_authorization_decisions_total",
    "Total number of terminal decisions made by an authorizer split by authorizer type, "
    "name, and decision.",
    ("type", "name", "decision"),
)

_SANITIZE = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def forbidden_message(attrs: Attributes) -> str:
    user = go_quote(attrs.user.name)
    if not attrs.resource_request:
        return f"User {user} cannot {attrs.verb} path {go_quote(attrs.path)}"
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    head = f"User {user} cannot {attrs.verb} resource {go_quote(resource)} in API group "
    head += go_quote(attrs.api_group)
    if attrs.namespace:
        return f"{head} in the namespace {go_quote(attrs.namespace)}"
    return f"{head} at the cluster scope"


def forbidden(attrs: Attributes, reason: str) -> apierrors.StatusError:
    """upstream's ``ForbiddenStatusError``: NewForbidden(group/resource, name, message)."""
    msg = forbidden_message(attrs).translate(_SANITIZE)
    if reason:
        msg = f"{msg}: {reason}"
    resource, group, name = attrs.resource, attrs.api_group, attrs.name
    if not resource and not group:
        message = f"forbidden: {msg}"
    else:
        qualified = f"{resource}.{group}" if group else resource
        message = (
            f"{qualified} {go_quote(name)} is forbidden: {msg}"
            if name
            else f"{qualified} is forbidden: {msg}"
        )
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    if resource:
        details["kind"] = resource
    body = apierrors.status_body(403, "Forbidden", message, details)
    body.setdefault("details", {})  # ``{}`` for a path, as Go encodes a non-nil pointer
    return apierrors.StatusError(body)


DECISION_ANNOTATION = "authorization.k8s.io/decision"
REASON_ANNOTATION = "authorization.k8s.io/reason"
AUDIT_DECISION = {True: "allow", False: "forbid"}

_RESULTS = {Decision.ALLOW: "allowed", Decision.DENY: "denied", Decision.NO_OPINION: "no-opinion"}


# labelled children, looked up once (prometheus_client's labels() costs microseconds)
_ATTEMPTS = {r: (ATTEMPTS.labels(r), DURATION.labels(r)) for r in _RESULTS.values()}
_DECISIONS: dict[tuple[str, str, str], Any] = {}


def authorize(authorizer: Union, attrs: Attributes) -> tuple[Decision, str]:
    """One decision with its metrics (the filter, impersonation and reviews use it)."""
    start = time.perf_counter()
    decision, reason, named = authorizer.decide(attrs)
    result = _RESULTS[decision]
    attempts, duration = _ATTEMPTS[result]
    attempts.inc()
    duration.observe(time.perf_counter() - start)
    if named is not None and named.type:  # the superuser shortcut is not counted
        key = (named.type, named.name, result)
        child = _DECISIONS.get(key)
        if child is None:
            child = _DECISIONS[key] = DECISIONS.labels(*key)
        child.inc()
    return decision, reason
