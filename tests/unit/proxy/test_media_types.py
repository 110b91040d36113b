"""Output media type negotiation: the Accept header, as=Table / PartialObjectMetadata[List]."""

from __future__ import annotations

import pytest

from proxy.endpoints.media_types import AcceptedFormat, NotAcceptableError, parse_accept

KUBECTL_GET = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)


@pytest.mark.parametrize(
    ("header", "is_list", "expected"),
    [
        (None, False, AcceptedFormat("json")),
        ("", True, AcceptedFormat("json")),
        ("*/*", False, AcceptedFormat("json")),
        (KUBECTL_GET, True, AcceptedFormat("table", "application/json", "v1")),
        ("application/json;as=Table;v=v1beta1;g=meta.k8s.io", False,
         AcceptedFormat("table", "application/json", "v1beta1")),
        ("application/json;as=Table;v=v2;g=meta.k8s.io,application/json", False,
         AcceptedFormat("json")),
        ("application/vnd.kubernetes.protobuf,application/json", False, AcceptedFormat("json")),
        ("application/yaml", False, AcceptedFormat("yaml", "application/yaml")),
        ("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", True,
         AcceptedFormat("partial-list", "application/json", "v1")),
        ("application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", False,
         AcceptedFormat("partial", "application/json", "v1")),
        ("application/yaml;q=0.5,application/json", False, AcceptedFormat("json")),
    ],
)  # fmt: skip
def test_parse_accept(header: str | None, is_list: bool, expected: AcceptedFormat) -> None:
    assert parse_accept(header, is_list=is_list) == expected


def test_parse_accept_not_acceptable() -> None:
    for header in (
        "application/vnd.kubernetes.protobuf",
        "text/html",
        "application/json;as=Table;v=v1;g=other.io",
        "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",  # for a list
    ):
        with pytest.raises(NotAcceptableError) as info:
            parse_accept(header, is_list=True)
        assert info.value.status_code == 406
        assert str(info.value) == (
            "only the following media types are accepted: application/json, application/yaml"
        )


def test_a_watch_takes_partial_object_metadata_for_its_events() -> None:
    """client-go's metadata client watches with as=PartialObjectMetadata (protobuf first)."""
    header = (
        f"{PB};as=PartialObjectMetadata;g=meta.k8s.io;v=v1,"
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
    )
    # a kind without protobuf: the JSON range of the same conversion
    assert parse_accept(header, is_list=True, watch=True) == (
        AcceptedFormat("partial", "application/json", "v1")
    )
    assert parse_accept(header, is_list=True, watch=True, protobuf=True) == (
        AcceptedFormat("partial", PB, "v1")
    )
    assert parse_accept(header, is_list=True, protobuf=True) == AcceptedFormat("json")  # a LIST


def test_content_types() -> None:
    assert parse_accept(KUBECTL_GET).content_type == "application/json;as=Table;v=v1;g=meta.k8s.io"
    assert AcceptedFormat("json").content_type == "application/json"


PB = "application/vnd.kubernetes.protobuf"


@pytest.mark.parametrize(
    ("header", "is_list", "expected"),
    [
        (PB, False, AcceptedFormat("protobuf", PB)),
        (f"{PB},application/json", True, AcceptedFormat("protobuf", PB)),
        (f"{PB};as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", True,
         AcceptedFormat("partial-list", PB, "v1")),
        (f"{PB};as=PartialObjectMetadata;v=v1;g=meta.k8s.io", False,
         AcceptedFormat("partial", PB, "v1")),
        # a Table is never protobuf (as upstream): the next range answers
        (f"{PB};as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io",
         True, AcceptedFormat("table", "application/json", "v1")),
    ],
)  # fmt: skip
def test_parse_accept_protobuf_where_the_resource_has_it(
    header: str, is_list: bool, expected: AcceptedFormat
) -> None:
    assert parse_accept(header, is_list=is_list, protobuf=True) == expected


def test_a_protobuf_table_alone_is_not_acceptable() -> None:
    with pytest.raises(NotAcceptableError):
        parse_accept(f"{PB};as=Table;v=v1;g=meta.k8s.io", is_list=True, protobuf=True)
