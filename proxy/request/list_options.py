"""List and watch query parameters: parsing, validation (the exact 422/400 messages of
apimachinery's ``internalversion/validation``), and conversion to storage ListOptions.

Validation failures are 422 Invalid with kind ``ListOptions.meta.k8s.io`` and an empty
name::

    ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: ...

Parameter values that cannot be parsed (limit, timeoutSeconds, selectors) are 400
BadRequest; booleans always parse, as upstream's query conversion reads them
(``request_info.query_bool``). The resourceVersion/continue checks that need the
storage's view (non-numeric RV, RV with continue, bad tokens) are the storage's, with
the same words.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

from proxy import apierrors
from proxy.apierrors import FieldError
from proxy.request.request_info import query_bool
from storage.interfaces import AttrsFunc, ListOptions, ResourceVersionMatch, SelectionPredicate
from storage.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)

__all__ = [
    "ListQuery",
    "parse_list_query",
    "query_bool",
    "query_int",
    "to_list_options",
    "validate_list_query",
]

_LIST_OPTIONS_KIND = "ListOptions.meta.k8s.io"


@dataclass(frozen=True, slots=True)
class ListQuery:
    """The list/watch parameters of one request, as sent (strings unparsed)."""

    resource_version: str = ""
    resource_version_match: str = ""
    continue_token: str = ""
    limit: int = 0
    label_selector: str = ""
    field_selector: str = ""
    watch: bool = False
    allow_watch_bookmarks: bool = False
    send_initial_events: bool | None = None
    timeout_seconds: int | None = None


def query_int(query: Mapping[str, str], name: str) -> int | None:
    """An integer query parameter (400 with strconv.ParseInt's words otherwise)."""
    if name not in query:  # present but empty is ParseInt(""): invalid syntax
        return None
    value = query[name]
    digits = value[1:] if value[:1] in ("+", "-") else value
    if not (digits.isascii() and digits.isdigit()):  # Go takes no spaces, "_" or non-ASCII
        raise apierrors.bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax')
    parsed = int(value)
    if not -(1 << 63) <= parsed < 1 << 63:  # an int64, as upstream's options fields
        raise apierrors.bad_request(f'strconv.ParseInt: parsing "{value}": value out of range')
    return parsed


def parse_list_query(query: Mapping[str, str], *, watch: bool = False) -> ListQuery:
    """The parameters of a list or watch request (400 on unparsable values)."""
    limit = query_int(query, "limit") or 0
    return ListQuery(
        resource_version=query.get("resourceVersion", ""),
        resource_version_match=query.get("resourceVersionMatch", ""),
        continue_token=query.get("continue", ""),
        limit=max(limit, 0),
        label_selector=query.get("labelSelector", ""),
        field_selector=query.get("fieldSelector", ""),
        watch=watch or bool(query_bool(query, "watch")),
        allow_watch_bookmarks=bool(query_bool(query, "allowWatchBookmarks")),
        send_initial_events=query_bool(query, "sendInitialEvents"),
        timeout_seconds=query_int(query, "timeoutSeconds"),
    )


def _list_errors(q: ListQuery) -> list[FieldError]:
    errs: list[FieldError] = []
    match = q.resource_version_match
    if match:
        if not q.resource_version:
            errs.append(
                FieldError.forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            )
        if q.continue_token:
            errs.append(
                FieldError.forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            )
        if match not in ("Exact", "NotOlderThan"):
            errs.append(
                FieldError.not_supported(
                    "resourceVersionMatch", match, ["Exact", "NotOlderThan", ""]
                )
            )
        if match == "Exact" and q.resource_version == "0":
            errs.append(
                FieldError.forbidden(
                    "resourceVersionMatch",
                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                )
            )
    if q.send_initial_events is not None:
        errs.append(
            FieldError.forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list")
        )
    return errs


def _watch_errors(q: ListQuery) -> list[FieldError]:
    errs: list[FieldError] = []
    match = q.resource_version_match
    if q.send_initial_events is not None and match != "NotOlderThan":
        errs.append(
            FieldError.forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            )
        )
    if match:
        if q.send_initial_events is None:
            errs.append(
                FieldError.forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                    "provided",
                )
            )
        if match != "NotOlderThan":
            errs.append(FieldError.not_supported("resourceVersionMatch", match, ["NotOlderThan"]))
        if q.continue_token:
            errs.append(
                FieldError.forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            )
    return errs


def validate_list_query(q: ListQuery) -> None:
    """422 Invalid (ListOptions.meta.k8s.io) when the combination is not allowed."""
    errs = _watch_errors(q) if q.watch else _list_errors(q)
    if errs:
        raise apierrors.invalid(_LIST_OPTIONS_KIND, "", errs)


def parse_selectors(
    q: ListQuery, resource_plural: str, name: str = "", get_attrs: AttrsFunc | None = None
) -> tuple[LabelSelector | None, FieldSelector | None]:
    """The parsed selectors (400 with the parser's message). ``name`` (a watch on one
    object by URL) adds ``metadata.name=<name>``, as upstream does. The fields a
    selector may name are those ``get_attrs`` offers (a custom resource's
    selectableFields), else the resource's built-in ones."""
    from storage.fields import validate_field_selector, validate_offered_fields

    try:
        label = parse_label_selector(q.label_selector) if q.label_selector else None
        field_text = q.field_selector
        if name:
            term = f"metadata.name={name}"
            field_text = f"{field_text},{term}" if field_text else term
        field = parse_field_selector(field_text) if field_text else None
        if field is not None and get_attrs is not None:
            validate_offered_fields(get_attrs, field)
        elif field is not None:
            validate_field_selector(resource_plural, field)
    except SelectorError as e:
        raise apierrors.bad_request(str(e)) from None
    return label, field


def to_list_options(
    q: ListQuery, resource_plural: str, get_attrs: AttrsFunc, name: str = ""
) -> ListOptions:
    """Storage ListOptions for a validated query."""
    label, field = parse_selectors(q, resource_plural, name, get_attrs)
    predicate = SelectionPredicate(
        label=label,
        field=field,
        get_attrs=get_attrs,
        limit=q.limit,
        continue_token=q.continue_token,
    )
    return ListOptions(
        resource_version=q.resource_version,
        resource_version_match=cast(ResourceVersionMatch, q.resource_version_match),
        predicate=predicate,
        send_initial_events=q.send_initial_events,
        allow_watch_bookmarks=q.allow_watch_bookmarks,
    )


def watch_timeout(
    q: ListQuery, min_request_timeout: float, rng: random.Random | None = None
) -> float:
    """A watch's duration: ``timeoutSeconds`` if given, else the minimum request timeout
    times a random factor in [1, 2) — kube-apiserver spreads reconnects this way. A
    negative ``timeoutSeconds`` ends the watch at once (upstream's timer fires then)."""
    if q.timeout_seconds:
        return max(float(q.timeout_seconds), 0.0)
    factor = (rng or random).random() + 1.0
    return min_request_timeout * factor
