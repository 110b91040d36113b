"""RequestInfo, ported from upstream's ``requestinfo_test.go``
(``k8s.io/apiserver/pkg/endpoints/request``: TestGetAPIRequestInfo,
TestGetNonAPIRequestInfo, TestSelectorParsing), plus the boolean query parameters as
apimachinery's ``Convert_Slice_string_To_bool`` reads them."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest
from multidict import MultiDict

from proxy.request.request_info import RequestInfo, parse_request_info, query_bool


def _info(method: str, url: str) -> RequestInfo:
    parts = urlsplit(url)
    query = MultiDict(parse_qsl(parts.query, keep_blank_values=True))
    return parse_request_info(method, parts.path, query)


# "METHOD URL", then "  verb prefix group version namespace resource subresource name
# parts" ("-" is empty, parts joined by "/"): TestGetAPIRequestInfo's success cases
_API_CASES = [
    "GET /api/v1/namespaces",
    "  list api - v1 - namespaces - - namespaces",
    "GET /api/v1/namespaces/other",
    "  get api - v1 other namespaces - other namespaces/other",
    "GET /api/v1/namespaces/other/pods",
    "  list api - v1 other pods - - pods",
    "GET /api/v1/namespaces/other/pods/foo",
    "  get api - v1 other pods - foo pods/foo",
    "HEAD /api/v1/namespaces/other/pods/foo",
    "  get api - v1 other pods - foo pods/foo",
    "GET /api/v1/pods",
    "  list api - v1 - pods - - pods",
    "HEAD /api/v1/pods",
    "  list api - v1 - pods - - pods",
    "GET /api/v1/proxy/namespaces/other/pods/foo",
    "  proxy api - v1 other pods - foo pods/foo",
    "GET /api/v1/proxy/namespaces/other/pods/foo/subpath/not/a/subresource",
    "  proxy api - v1 other pods - foo pods/foo/subpath/not/a/subresource",
    "GET /api/v1/watch/pods",
    "  watch api - v1 - pods - - pods",
    "GET /api/v1/pods?watch=true",
    "  watch api - v1 - pods - - pods",
    "GET /api/v1/pods?watch=false",
    "  list api - v1 - pods - - pods",
    "GET /api/v1/watch/namespaces/other/pods",
    "  watch api - v1 other pods - - pods",
    "GET /api/v1/namespaces/other/pods?watch=1",
    "  watch api - v1 other pods - - pods",
    "GET /api/v1/namespaces/other/pods?watch=0",
    "  list api - v1 other pods - - pods",
    "GET /api/v1/namespaces/other/pods/foo/status",
    "  get api - v1 other pods status foo pods/foo/status",
    "GET /api/v1/namespaces/other/pods/foo/proxy/subpath",
    "  get api - v1 other pods proxy foo pods/foo/proxy/subpath",
    "PUT /api/v1/namespaces/other/finalize",
    "  update api - v1 other namespaces finalize other namespaces/other/finalize",
    "PUT /api/v1/namespaces/other/status",
    "  update api - v1 other namespaces status other namespaces/other/status",
    "PATCH /api/v1/namespaces/other/pods/foo",
    "  patch api - v1 other pods - foo pods/foo",
    "DELETE /api/v1/namespaces/other/pods/foo",
    "  delete api - v1 other pods - foo pods/foo",
    "POST /api/v1/namespaces/other/pods",
    "  create api - v1 other pods - - pods",
    "DELETE /api/v1/nodes",
    "  deletecollection api - v1 - nodes - - nodes",
    "DELETE /api/v1/namespaces",
    "  deletecollection api - v1 - namespaces - - namespaces",
    "DELETE /api/v1/namespaces/other/pods",
    "  deletecollection api - v1 other pods - - pods",
    "DELETE /apis/extensions/v1/namespaces/other/pods",
    "  deletecollection apis extensions v1 other pods - - pods",
    "POST /apis/extensions/v1/namespaces/other/pods",
    "  create apis extensions v1 other pods - - pods",
    "POST /apis/extensions/v1beta3/namespaces/other/pods",
    "  create apis extensions v1beta3 other pods - - pods",
]
_API_ROWS = [(_API_CASES[i], _API_CASES[i + 1].split()) for i in range(0, len(_API_CASES), 2)]


@pytest.mark.parametrize(("request_line", "expected"), _API_ROWS, ids=[r[0] for r in _API_ROWS])
def test_get_api_request_info(request_line: str, expected: list[str]) -> None:
    method, url = request_line.split()
    info = _info(method, url)
    assert info.is_resource_request
    got = [
        info.verb, info.api_prefix, info.group, info.version, info.namespace, info.resource,
        info.subresource, info.name,
    ]  # fmt: skip
    assert [v or "-" for v in got] == expected[:8]
    assert "/".join(info.parts) == expected[8]


@pytest.mark.parametrize(
    ("url", "prefixed"),
    [
        ("/api/v1/namespaces/other", False),  # a namespace's own path
        ("/api/v1/namespaces/other/status", False),
        ("/api/v1/namespaces/other/finalize", False),
        ("/api/v1/namespaces", False),
        ("/api/v1/nodes/n", False),
        ("/api/v1/namespaces/other/pods/foo", True),
        ("/api/v1/namespaces/other/nodes", True),  # no such route: the handler's 404
        ("/api/v1/namespaces/other/namespaces/x", True),
    ],
)
def test_the_namespace_prefix_is_told_from_a_namespaces_own_path(url: str, prefixed: bool) -> None:
    assert _info("GET", url).namespace_prefix is prefixed


@pytest.mark.parametrize(
    "url",
    [
        "/",  # no resource path
        "/api/version/",  # just apiversion
        "/apis/group/version/",  # just prefix, group, version
        "/badprefix/version/resource",  # bad prefix
        "/apis/version/resource",  # missing api group
    ],
)
def test_api_error_cases_are_non_resource_requests(url: str) -> None:
    assert not _info("GET", url).is_resource_request


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("/api/version/resource", True),  # simple groupless
        ("/apis/group/version/resource/name/subresource", True),  # simple group
        ("/api/version/resource/name/subresource", True),  # more steps
        ("/apis/batch/v1/job", True),  # group list
        ("/apis/batch/v1/job/foo", True),  # group get
        ("/apis/batch/v1/job/foo/scale", True),  # group subresource
        ("/not-api/version/resource", False),  # bad root
        ("/apis/extensions/v1beta1", False),  # group without enough steps
        ("/apis/extensions/v1beta1/", False),  # group without enough steps 2
        ("/api/version", False),  # not enough steps
        ("/api", False),  # one step
        ("/", False),  # zero step
        ("", False),  # empty
    ],
)
def test_get_non_api_request_info(url: str, expected: bool) -> None:
    info = _info("GET", url)
    assert info.is_resource_request is expected
    if not expected:
        assert info.verb == "get"


# TestSelectorParsing: "METHOD <url after /apis/group/version/>", then "  name verb
# fieldSelector labelSelector" ("-" is empty)
_SELECTOR_CASES = [
    # no selector
    "GET resource",
    "  - list - -",
    # metadata.name selector
    "GET resource?fieldSelector=metadata.name=name1",
    "  name1 list metadata.name=name1 -",
    # metadata.name selector with watch
    "GET resource?watch=true&fieldSelector=metadata.name=name1",
    "  name1 watch metadata.name=name1 -",
    # random selector
    "GET resource?fieldSelector=foo=bar&labelSelector=baz=qux",
    "  - list foo=bar baz=qux",
    # invalid selector with metadata.name
    "GET resource?fieldSelector=metadata.name=name1,foo",
    "  - list metadata.name=name1,foo -",
    # invalid selector with metadata.name with watch
    "GET resource?fieldSelector=metadata.name=name1,foo&watch=true",
    "  - watch metadata.name=name1,foo -",
    # invalid selector with metadata.name with watch false
    "GET resource?fieldSelector=metadata.name=name1,foo&watch=false",
    "  - list metadata.name=name1,foo -",
    # selector on deletecollection is honored
    "DELETE resource?fieldSelector=foo=bar&labelSelector=baz=qux",
    "  - deletecollection foo=bar baz=qux",
    # selector on repeated param matches parsed param
    "GET resource?fieldSelector=metadata.name=foo&fieldSelector=metadata.name=bar"
    "&labelSelector=foo=bar&labelSelector=foo=baz",
    "  foo list metadata.name=foo foo=bar",
    # selector on other verb is ignored
    "GET resource/name?fieldSelector=foo=bar&labelSelector=foo=bar",
    "  name get - -",
    # selector on deprecated root type watch is not parsed
    "GET watch/resource?fieldSelector=metadata.name=foo&labelSelector=foo=bar",
    "  - watch - -",
    # selector on deprecated root item watch is not parsed
    "GET watch/resource/name?fieldSelector=metadata.name=foo&labelSelector=foo=bar",
    "  name watch - -",
]
_SELECTOR_ROWS = [
    (_SELECTOR_CASES[i], [v if v != "-" else "" for v in _SELECTOR_CASES[i + 1].split()])
    for i in range(0, len(_SELECTOR_CASES), 2)
]


@pytest.mark.parametrize(("request_line", "expected"), _SELECTOR_ROWS)
def test_selector_parsing(request_line: str, expected: list[str]) -> None:
    method, tail = request_line.split()
    info = _info(method, f"/apis/group/version/{tail}")
    assert [info.name, info.verb, info.field_selector, info.label_selector] == expected


def test_a_name_from_the_field_selector_is_not_the_urls() -> None:
    info = _info("GET", "/api/v1/namespaces/ns/pods?fieldSelector=metadata.name%3Dp1")
    assert (info.name, info.path_name) == ("p1", "")
    # an unparseable list option drops what was parsed, as upstream's decode failure does
    info = _info("GET", "/api/v1/pods?fieldSelector=metadata.name%3Dp1&limit=abc")
    assert (info.verb, info.name) == ("list", "")
    # a name that is not a valid path segment is not taken
    assert _info("GET", "/api/v1/pods?fieldSelector=metadata.name%3D..").name == ""


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1", True), ("t", True), ("T", True), ("true", True), ("TRUE", True), ("True", True),
        ("", True), ("yes", True), ("no", True), ("f", True), ("maybe", True),
        ("0", False), ("false", False), ("FALSE", False), ("False", False), ("fAlSe", False),
    ],
)  # fmt: skip
def test_boolean_query_parameters_read_as_upstream_converts_them(
    value: str, expected: bool
) -> None:
    """``Convert_Slice_string_To_bool``: only ``0`` and ``false`` (any case) are false;
    nothing is unparseable. The watch verb and every boolean parameter agree."""
    assert query_bool({"watch": value}, "watch") is expected
    assert query_bool({}, "watch") is None
    info = _info("GET", f"/api/v1/pods?watch={value}")
    assert info.verb == ("watch" if expected else "list")


def test_a_named_get_with_watch_stays_a_get() -> None:
    """Upstream turns only a nameless GET into list/watch; a named one is a get."""
    assert _info("GET", "/api/v1/namespaces/ns/pods/p?watch=true").verb == "get"
