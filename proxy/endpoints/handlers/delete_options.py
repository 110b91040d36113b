"""Reads a DELETE's options: decodes its body, when it has one, by its media type (415
for one the server does not decode, 400 for bytes that do not decode), then hands the
decoded options or the query to ``proxy.request.delete_options``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from proxy import apierrors
from proxy.endpoints import decoding, negotiation, protobuf
from proxy.request.delete_options import (
    DeleteOptions,
    from_decoded_body,
    from_query,
    validate_delete_options,
)

__all__ = ["parse_delete_options"]


def _decode_body(body: bytes, media_type: str) -> object:
    negotiation.check_body_type(media_type)  # 415 as upstream's input negotiation
    try:
        if media_type == negotiation.PROTOBUF_TYPE:  # client-go's typed clients
            opts: Any = protobuf.decode_options(body, "DeleteOptions")
        else:
            opts = decoding.decode_structured(body, media_type)
    except ValueError as e:
        raise apierrors.bad_request(f"invalid DeleteOptions: {e}") from None
    return opts


def parse_delete_options(
    query: Mapping[str, str],
    body: bytes,
    media_type: str,
    *,
    unsafe_delete_gate: bool = True,
    collection: bool = False,
) -> DeleteOptions:
    """The request's DeleteOptions: the body's if it has one, else the query's, validated."""
    has_body = bool(body.strip())  # a body that decodes to null is still a body (400)
    opts = from_decoded_body(_decode_body(body, media_type)) if has_body else from_query(query)
    return validate_delete_options(
        opts, unsafe_delete_gate=unsafe_delete_gate, collection=collection
    )
