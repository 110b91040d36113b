"""Server-side printing: ``meta.k8s.io`` Tables, as kube-apiserver answers ``as=Table``,
and the PartialObjectMetadata[List] conversions (``as=PartialObjectMetadata[List]``).

kubectl asks every ``get`` with ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io,
application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json`` and prints the
cells it gets back. The columns and cells are those of kubectl's printers
(``pkg/printers/internalversion/printers.go``), one module of handlers per API group
(:mod:`proxy.kube.printers.core`, ``apps``, ``batch``, ``coordination``, ``rbac``;
APIService's in :mod:`proxy.aggregator.printers`) registered in
:mod:`proxy.printers.handlers`; they are generated as the apiserver does: always "wide"
(columns with ``priority`` 1 are hidden by kubectl unless ``-o wide``). Every other
resource gets NAME and AGE, as custom resources without printer columns do. (kube's
``rest.DefaultTableConvertor`` prints "Name" and "Created At"; it is only reached by
types with no printer at all, which a user never sees for built-in kinds;
:func:`default_columns_table` offers it.)

A list is printed one object at a time so that it can be streamed in bounded steps: a
:class:`TableConvertor` gives the Table's header (everything but ``rows``) and one row
per object; ``{**header, "rows": [row, ...]}`` is :func:`to_table`'s document.
:func:`partial_object_metadata_list_header` and :func:`as_partial_object_metadata` do
the same for a PartialObjectMetadataList.

Pure functions: no I/O; ``now`` is passed in so ages are testable.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Literal, cast

import orjson

from proxy.apimachinery.api_resource import NamedResource
from proxy.printers.columns import CREATED_AT, JSON, NAME, TablePrinter, object_meta
from proxy.printers.duration import epoch_microseconds, human_duration
from proxy.printers.handlers import printer_for
from proxy.printers.row_template import render_age, template_of
from storage.interfaces import StoredObject

__all__ = [
    "META_GROUP",
    "TABLE_VERSIONS",
    "TableConvertor",
    "TableError",
    "TableResource",
    "TableWatchEncoder",
    "as_partial_object_metadata",
    "as_partial_object_metadata_list",
    "default_columns_table",
    "human_duration",
    "list_meta_of",
    "partial_object_metadata_list_header",
    "table_watch_event",
    "to_table",
]

IncludeObject = Literal["None", "Metadata", "Object"]
META_GROUP = "meta.k8s.io"
TABLE_VERSIONS = ("v1", "v1beta1")
LIST_META_KEYS = ("resourceVersion", "continue", "remainingItemCount")

TableResource = NamedResource  # what printing needs (proxy.apimachinery.api_resource)


class TableError(ValueError):
    """A bad table request; ``status_code`` 400 (BadRequest)."""

    status_code = 400
    reason = "BadRequest"


def list_meta_of(list_meta: Mapping[str, JSON]) -> dict[str, JSON]:
    """The ListMeta a converted list carries: resourceVersion, continue and
    remainingItemCount, those that are set."""
    return {k: list_meta[k] for k in LIST_META_KEYS if list_meta.get(k) not in (None, "")}


class TableConvertor:
    """Prints objects of one resource as rows of a ``meta.k8s.io/<table_version>`` Table,
    for one request (one ``now``, so every row's ages agree).

    ``include_object`` is the ``includeObject`` option: ``Metadata`` (default, rows carry
    PartialObjectMetadata), ``Object`` (the whole object) or ``None`` (``"object":
    null``); anything else raises TableError (400, ``unrecognized includeObject value:
    "x"``), as does an unknown table version. ``no_headers`` drops the column definitions
    (``TableOptions.noHeaders``).
    """

    def __init__(
        self,
        resource: TableResource,
        *,
        include_object: str = "Metadata",
        table_version: str = "v1",
        now: dt.datetime,
        no_headers: bool = False,
        printer: TablePrinter | None = None,
    ) -> None:
        include = include_object or "Metadata"
        if include not in ("None", "Metadata", "Object"):
            raise TableError(f'unrecognized includeObject value: "{include_object}"')
        if table_version not in TABLE_VERSIONS:
            raise TableError(f"unsupported Table version {table_version!r}")
        self.include_object = cast(IncludeObject, include)
        self.table_version = table_version
        self.now = now
        self.no_headers = no_headers
        self._printer = printer or printer_for(resource)
        self._template_key = f"table-row:{resource.group}/{resource.plural}"
        self._now_us = epoch_microseconds(now)
        self._ages: dict[int, bytes] = {}  # by start: ``_age``'s
        self._partial_head = (
            b'{"kind":"PartialObjectMetadata","apiVersion":"'
            + f"{META_GROUP}/{table_version}".encode()
            + b'","metadata":'
        )

    def header(self, metadata: dict[str, JSON]) -> dict[str, JSON]:
        """The Table without its ``rows`` (the last key of the document)."""
        return {
            "kind": "Table",
            "apiVersion": f"{META_GROUP}/{self.table_version}",
            "metadata": metadata,
            "columnDefinitions": (
                [] if self.no_headers else [c.to_json() for c in self._printer.columns]
            ),
        }

    def row(self, obj: dict[str, JSON]) -> dict[str, JSON]:
        """One object's row: its cells, conditions (when any) and object."""
        cells, conditions = self._printer.print_row(obj, self.now)
        row: dict[str, JSON] = {"cells": cells}
        if conditions:
            row["conditions"] = conditions
        row["object"] = _row_object(obj, self.include_object, self.table_version)
        return row

    def row_json(self, stored: StoredObject) -> bytes:
        """``orjson.dumps(self.row(obj))`` of one version, from its row template (cells
        printed once per version and kept with it; ages rendered at ``now``): the JSON
        equals that of ``row`` (byte for byte for orjson-encoded versions)."""
        template = template_of(stored, self._template_key, self._printer.print_row)
        if template is None:
            return orjson.dumps(self.row(stored.decoded()))
        head = template.head(self._age)
        if self.include_object == "None":
            return head + b"null}"
        if self.include_object == "Object":
            return b"".join((head, stored.data, b"}"))
        return b"".join((head, self._partial_head, template.metadata_of(stored.data), b"}}"))

    def _age(self, start_us: int) -> bytes:
        """An age at this request's ``now``, rendered once per start: creation times
        are whole seconds, and pods made together share them."""
        found = self._ages.get(start_us)
        if found is None:
            found = self._ages[start_us] = render_age(self._now_us, start_us)
        return found


def _row_object(obj: dict[str, JSON], include_object: IncludeObject, table_version: str) -> JSON:
    if include_object == "None":
        return None
    if include_object == "Object":
        return obj
    return as_partial_object_metadata(obj, table_version)


def to_table(
    resource: TableResource,
    objects: Sequence[dict[str, JSON]],
    *,
    include_object: str = "Metadata",
    list_meta: Mapping[str, JSON] | None = None,
    now: dt.datetime,
    table_version: str = "v1",
    no_headers: bool = False,
    printer: TablePrinter | None = None,
) -> dict[str, JSON]:
    """A ``meta.k8s.io/<table_version>`` Table of ``objects`` (one row each, in order).

    ``list_meta`` is the list's metadata (resourceVersion, continue,
    remainingItemCount copied over); ``None`` for a single-object GET, whose table then
    carries that object's resourceVersion. The options are :class:`TableConvertor`'s
    (``printer``: the resource's own columns, a custom kind's; else the built-in table's).
    """
    convertor = TableConvertor(
        resource,
        include_object=include_object,
        table_version=table_version,
        now=now,
        no_headers=no_headers,
        printer=printer,
    )
    table = convertor.header(_table_meta(objects, list_meta))
    table["rows"] = [convertor.row(obj) for obj in objects]
    return table


def _table_meta(
    objects: Sequence[dict[str, JSON]], list_meta: Mapping[str, JSON] | None
) -> dict[str, JSON]:
    if list_meta is None:
        rv = object_meta(objects[0]).get("resourceVersion") if len(objects) == 1 else None
        return {"resourceVersion": rv} if rv else {}
    return list_meta_of(list_meta)


def table_watch_event(
    resource: TableResource,
    event_type: str,
    obj: dict[str, JSON],
    *,
    include_object: str = "Metadata",
    now: dt.datetime,
    table_version: str = "v1",
    no_headers: bool = False,
    printer: TablePrinter | None = None,
) -> dict[str, JSON]:
    """A watch event whose object is a one-row Table, as ``kubectl get -w`` reads them.

    ERROR events (their object is a Status) and BOOKMARK events pass through unchanged,
    as kube-apiserver does not print them.
    """
    if event_type in ("ERROR", "BOOKMARK"):
        return {"type": event_type, "object": obj}
    table = to_table(
        resource,
        [obj],
        include_object=include_object,
        list_meta=None,
        now=now,
        table_version=table_version,
        no_headers=no_headers,
        printer=printer,
    )
    return {"type": event_type, "object": table}


class TableWatchEncoder:
    """Turns one watch stream's events into Table events, as kube-apiserver does.

    The first printed event carries the column definitions; later ones omit them
    (kube's ``watchEmbeddedEncoder`` sets ``noHeaders`` after the first object).
    ERROR (Status) and BOOKMARK events pass through untransformed. One encoder per
    watch stream; not shared between tasks.
    """

    def __init__(
        self,
        resource: TableResource,
        *,
        include_object: str = "Metadata",
        table_version: str = "v1",
        no_headers: bool = False,
        printer: TablePrinter | None = None,
    ) -> None:
        self.resource = resource
        self.printer = printer
        self.include_object = include_object
        self.table_version = table_version
        self._sent_headers = no_headers

    def encode(self, event_type: str, obj: dict[str, JSON], now: dt.datetime) -> dict[str, JSON]:
        """The ``{"type": ..., "object": <Table>}`` event for one watch event."""
        event = table_watch_event(
            self.resource,
            event_type,
            obj,
            include_object=self.include_object,
            now=now,
            table_version=self.table_version,
            no_headers=self._sent_headers,
            printer=self.printer,
        )
        if event_type not in ("ERROR", "BOOKMARK"):
            self._sent_headers = True
        return event


def as_partial_object_metadata(obj: Mapping[str, JSON], version: str = "v1") -> dict[str, JSON]:
    """``meta.AsPartialObjectMetadata``: the object's metadata only (``as=PartialObjectMetadata``;
    also the object of each watch event when a client watches with PartialObjectMetadataList)."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": f"{META_GROUP}/{version}",
        "metadata": dict(object_meta(obj)),
    }


def partial_object_metadata_list_header(
    list_meta: Mapping[str, JSON], version: str = "v1"
) -> dict[str, JSON]:
    """A PartialObjectMetadataList without its ``items`` (the last key of the document)."""
    return {
        "kind": "PartialObjectMetadataList",
        "apiVersion": f"{META_GROUP}/{version}",
        "metadata": list_meta_of(list_meta),
    }


def as_partial_object_metadata_list(
    objects: Sequence[Mapping[str, JSON]], list_meta: Mapping[str, JSON], version: str = "v1"
) -> dict[str, JSON]:
    """A PartialObjectMetadataList (``as=PartialObjectMetadataList``) of a list response."""
    doc = partial_object_metadata_list_header(list_meta, version)
    doc["items"] = [as_partial_object_metadata(o, version) for o in objects]
    return doc


def default_columns_table(
    objects: Sequence[dict[str, JSON]], *, table_version: str = "v1"
) -> dict[str, JSON]:
    """kube's ``rest.DefaultTableConvertor``: Name and ``Created At`` (RFC 3339)."""
    columns = (NAME, CREATED_AT)
    rows = [
        {
            "cells": [
                object_meta(o).get("name", ""),
                object_meta(o).get("creationTimestamp") or "",
            ],
            "object": _row_object(o, "Metadata", table_version),
        }
        for o in objects
    ]
    return {
        "kind": "Table",
        "apiVersion": f"{META_GROUP}/{table_version}",
        "metadata": {},
        "columnDefinitions": [c.to_json() for c in columns],
        "rows": rows,
    }
