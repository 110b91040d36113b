"""Output media type negotiation: which response an ``Accept`` header asks for.

kube-apiserver's ``negotiation.NegotiateOutputMediaType`` with the ``as``/``g``/``v``
parameters of the ``meta.k8s.io`` conversions: the object itself (JSON or YAML), a
Table (``as=Table``, what kubectl asks for on every ``get``), or
PartialObjectMetadata[List]. Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from proxy.printers.table import META_GROUP, TABLE_VERSIONS

__all__ = [
    "ACCEPTED_MEDIA",
    "JSON_MEDIA",
    "PROTOBUF_MEDIA",
    "YAML_MEDIA",
    "AcceptedFormat",
    "Format",
    "NotAcceptableError",
    "parse_accept",
]

Format = Literal["table", "partial", "partial-list", "json", "yaml", "protobuf"]
JSON_MEDIA = "application/json"
YAML_MEDIA = "application/yaml"
PROTOBUF_MEDIA = "application/vnd.kubernetes.protobuf"
ACCEPTED_MEDIA = (JSON_MEDIA, YAML_MEDIA, PROTOBUF_MEDIA)


@dataclass(frozen=True)
class AcceptedFormat:
    """The response a request asked for.

    ``format``: ``table`` (a meta.k8s.io Table), ``partial`` / ``partial-list``
    (PartialObjectMetadata[List]), ``json``, ``yaml`` or ``protobuf`` (the object
    itself). ``media_type``: the encoding (application/json, application/yaml or
    application/vnd.kubernetes.protobuf).
    ``version``: the meta.k8s.io version for table/partial formats (``v1``/``v1beta1``).
    ``content_type``: the response Content-Type header to send.
    """

    format: Format
    media_type: str = JSON_MEDIA
    version: str = ""

    @property
    def content_type(self) -> str:
        if self.format == "table":
            return f"{self.media_type};as=Table;v={self.version};g={META_GROUP}"
        if self.format == "partial":
            return f"{self.media_type};as=PartialObjectMetadata;v={self.version};g={META_GROUP}"
        if self.format == "partial-list":
            return f"{self.media_type};as=PartialObjectMetadataList;v={self.version};g={META_GROUP}"
        return self.media_type


class NotAcceptableError(ValueError):
    """No media range of the Accept header can be served: 406 NotAcceptable."""

    status_code = 406
    reason = "NotAcceptable"

    def __init__(self, accepted: Sequence[str] = (JSON_MEDIA, YAML_MEDIA)) -> None:
        super().__init__(f"only the following media types are accepted: {', '.join(accepted)}")


def _media_ranges(header: str) -> list[tuple[float, str, dict[str, str]]]:
    ranges = []
    for n, clause in enumerate(header.split(",")):
        parts = [p.strip() for p in clause.split(";")]
        if not parts[0]:
            continue
        params: dict[str, str] = {}
        for p in parts[1:]:
            key, _, value = p.partition("=")
            params[key.strip().lower()] = value.strip().strip('"')
        try:
            q = float(params.pop("q", "1"))
        except ValueError:
            q = 0.0
        ranges.append((q, f"{n:04d}", {"": parts[0].lower(), **params}))
    ranges.sort(key=lambda r: (-r[0], r[1]))  # by q, then the client's order
    return [r for r in ranges if r[0] > 0]


_PLAIN: dict[str, Format] = {JSON_MEDIA: "json", YAML_MEDIA: "yaml", PROTOBUF_MEDIA: "protobuf"}


def _as_format(
    media: dict[str, str], is_list: bool, protobuf: bool, watch: bool = False
) -> AcceptedFormat | None:
    mtype = media[""]
    if mtype in ("*/*", "application/*", "application/json", "application/json-seq"):
        base = JSON_MEDIA
    elif mtype in (YAML_MEDIA, "application/yml", "text/yaml"):
        base = YAML_MEDIA
    elif mtype == PROTOBUF_MEDIA and protobuf:
        base = PROTOBUF_MEDIA
    else:
        return None  # cbor, ... are not served
    kind = media.get("as", "")
    if not kind:
        return AcceptedFormat(_PLAIN[base], base)
    if media.get("g") != META_GROUP or media.get("v") not in TABLE_VERSIONS:
        return None
    version = media["v"]
    if kind == "Table":
        return AcceptedFormat("table", base, version) if base != PROTOBUF_MEDIA else None
    if kind == "PartialObjectMetadata" and (watch or not is_list):
        return AcceptedFormat("partial", base, version)
    if kind == "PartialObjectMetadataList" and is_list:
        return AcceptedFormat("partial-list", base, version)
    return None


def parse_accept(
    header: str | None,
    *,
    is_list: bool = False,
    protobuf: bool = False,
    watch: bool = False,
    table: bool = True,
) -> AcceptedFormat:
    """The format to answer with for an ``Accept`` header (``None``/empty: JSON).

    Media ranges are tried by q-value, then in the client's order; the first one served
    wins. ``as=Table`` needs ``g=meta.k8s.io`` and ``v=v1|v1beta1``; PartialObjectMetadata
    is for a single object, PartialObjectMetadataList for lists and watches
    (``is_list``); a watch (``watch``, with ``is_list``) takes both: its events' objects
    are single objects, which is what client-go's metadata client asks for
    (``as=PartialObjectMetadata``, protobuf first). ``protobuf``: the resource can be
    served as protobuf (the object and PartialObjectMetadata[List]; a Table never is, as
    upstream). ``table``: the resource has a Table convertor (upstream's
    ``AllowsMediaTypeTransform``: a review has none). Raises
    :class:`NotAcceptableError` (406) when nothing fits.
    """
    if not header or not header.strip():
        return AcceptedFormat("json")
    for _, _, media in _media_ranges(header):
        found = _as_format(media, is_list, protobuf, watch)
        if found is not None and (table or found.format != "table"):
            return found
    raise NotAcceptableError()
