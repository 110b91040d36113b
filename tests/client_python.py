"""Typed access to the official ``kubernetes`` Python client (client-python) for the tests.

Its models type every ``metadata`` as Optional although a server always sets it; its
``watch`` module is untyped; and its API methods are typed as returning the decoded model
even with ``_preload_content=False``, when they return the raw HTTP response. These
helpers state what the tests rely on, so the tests themselves stay typed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

import urllib3
from kubernetes import watch
from kubernetes.client import V1ListMeta, V1ObjectMeta

__all__ = ["Watch", "call_raw", "list_meta", "meta", "names"]


class _Object(Protocol):
    @property
    def metadata(self) -> V1ObjectMeta | None: ...


class _List(Protocol):
    @property
    def metadata(self) -> V1ListMeta | None: ...

    @property
    def items(self) -> list[Any]: ...


def meta(obj: _Object) -> V1ObjectMeta:
    """``obj.metadata``, which every object a server returns has."""
    assert obj.metadata is not None, obj
    return obj.metadata


def list_meta(lst: _List) -> V1ListMeta:
    """``lst.metadata``, which every list a server returns has."""
    assert lst.metadata is not None, lst
    return lst.metadata


def names(lst: _List) -> list[str | None]:
    """The names of a list's items, in order."""
    return [meta(item).name for item in lst.items]


def call_raw(
    method: Callable[..., object], *args: object, **kwargs: object
) -> urllib3.HTTPResponse:
    """``method(*args, **kwargs, _preload_content=False)``: the undecoded response, whose
    body the test reads as JSON (``.data``) or as a stream of lines. Bodies may be plain
    dicts, sent as they are."""
    resp = method(*args, _preload_content=False, **kwargs)
    assert isinstance(resp, urllib3.HTTPResponse), type(resp)
    return resp


class Watch:
    """``kubernetes.watch.Watch`` with types: ``stream(list_method, *args, **kwargs)``
    yields its events (``{"type": ..., "object": <model>, "raw_object": {...}}``) until
    ``stop()``."""

    # kubernetes.watch has no annotations: the three ignores below are for it alone
    def __init__(self) -> None:
        self._watch = watch.Watch()  # type: ignore[no-untyped-call]

    def stream(
        self, method: Callable[..., object], *args: object, **kwargs: object
    ) -> Iterator[dict[str, Any]]:
        events: Iterator[dict[str, Any]] = self._watch.stream(method, *args, **kwargs)  # type: ignore[no-untyped-call]
        return events

    def stop(self) -> None:
        self._watch.stop()  # type: ignore[no-untyped-call]
