"""The WatchList (streaming list, KEP-3157) bookmark's list blueprint, after upstream's
``watchListTransformer`` (``endpoints/handlers/response.go``, 1.32-1.33).

A WatchList request (``watch=1&sendInitialEvents=true&allowWatchBookmarks=true``) ends
its initial events with a BOOKMARK annotated ``k8s.io/initial-events-end: "true"``. From
1.32 kube-apiserver also annotates that bookmark with
``kubernetes.io/initial-events-list-blueprint``: the base64 of an empty list of the
resource, encoded as the stream's objects are (JSON with its trailing newline, or the
protobuf envelope; a PartialObjectMetadataList when the events are
PartialObjectMetadata). client-go 1.32's ``Request.WatchList`` (typed clients' List
with the WatchListClient gate, the metadata client's ``watchList``) decodes the list it
returns from it and fails without it (``annotation is missing content``). 1.34 stopped
sending it (kubernetes#132326) once client-go no longer read it; watchcache keeps
sending it so that 1.32 and 1.33 clients work, and newer ones ignore it.
"""

from __future__ import annotations

import base64

import orjson

from proxy.endpoints import protobuf
from proxy.endpoints.media_types import AcceptedFormat
from proxy.printers.table import META_GROUP
from proxy.registry.resources import ResourceInfo

__all__ = ["INITIAL_EVENTS_END", "LIST_BLUEPRINT", "blueprint", "with_blueprint"]

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
LIST_BLUEPRINT = "kubernetes.io/initial-events-list-blueprint"


def blueprint(fmt: AcceptedFormat, resource: ResourceInfo) -> str:
    """The annotation's value for a stream negotiated as ``fmt``: an empty versioned
    list (``metadata: {}``, ``items: null`` as Go's encoder writes a nil slice), encoded
    by the stream's object encoder, in base64."""
    if fmt.format in ("partial", "partial-list"):
        kind, api_version = "PartialObjectMetadataList", f"{META_GROUP}/{fmt.version}"
    else:  # the object's list; a Table stream's too (upstream converts only metadata)
        kind, api_version = resource.list_kind, resource.api_version
    empty: dict[str, object] = {"kind": kind, "apiVersion": api_version, "metadata": {}}
    encoded = protobuf.encode_object(empty) if fmt.media_type == protobuf.MEDIA_TYPE else None
    if encoded is None:  # JSON, as Go's json.Encoder writes it: one line
        encoded = orjson.dumps({**empty, "items": None}) + b"\n"
    return base64.b64encode(encoded).decode()


def with_blueprint(data: bytes, value: str) -> bytes:
    """A BOOKMARK's object with the blueprint annotation when it is the
    initial-events-end bookmark (``data`` unchanged otherwise: periodic bookmarks)."""
    if INITIAL_EVENTS_END.encode() not in data:
        return data
    obj = orjson.loads(data)
    annotations = obj.get("metadata", {}).get("annotations") or {}
    if annotations.get(INITIAL_EVENTS_END) != "true":
        return data
    obj["metadata"]["annotations"] = {**annotations, LIST_BLUEPRINT: value}
    return orjson.dumps(obj)
