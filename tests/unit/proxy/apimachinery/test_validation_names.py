"""String formats and name rules: the good and bad values of apimachinery's
``util/validation/validation_test.go`` and ``api/validation/generic.go``, with the
exact messages kube-apiserver answers."""

from __future__ import annotations

import pytest

from proxy.apimachinery.validation import names

DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    "an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


@pytest.mark.parametrize(
    "value",
    ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "01", "012", "1a", "1-a", "1--a--b--2",
     "a" * 63],
)  # fmt: skip
def test_dns1123_label_good(value: str) -> None:
    assert names.is_dns1123_label(value) == []


@pytest.mark.parametrize(
    "value",
    ["", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "1-", "-1", "_", "a_", "_a",
     "a_b", "1_", "_1", "1_2", ".", "a.", ".a", "a.b", "1.", ".1", "1.2", " ", "a ", " a",
     "a b", "1 ", " 1", "1 2", "a" * 64, "a\n"],
)  # fmt: skip
def test_dns1123_label_bad(value: str) -> None:
    assert names.is_dns1123_label(value)


def test_dns1123_label_messages() -> None:
    assert names.is_dns1123_label("Bad") == [DNS1123_LABEL_MSG]
    # a valid subdomain that is not a label is told so, briefly
    assert names.is_dns1123_label("a.b") == ["must not contain dots"]
    assert names.is_dns1123_label("a" * 64) == ["must be no more than 63 characters"]


@pytest.mark.parametrize(
    "value",
    ["a", "a.a", "ab.a", "a--1--2--b.a", "0.1", "1--a--b--2.1", "a.b.c.d.e", "1.2.3.4.5",
     "a" * 253],
)  # fmt: skip
def test_dns1123_subdomain_good(value: str) -> None:
    assert names.is_dns1123_subdomain(value) == []


def test_dns1123_subdomain_bad_and_messages() -> None:
    for bad in ("", "A", "a..b", "-a", "a-", ".a", "a.", "a_b", "a" * 254):
        assert names.is_dns1123_subdomain(bad), bad
    assert names.is_dns1123_subdomain("Bad_Name") == [DNS1123_SUBDOMAIN_MSG]
    assert names.is_dns1123_subdomain("a" * 254) == ["must be no more than 253 characters"]


def test_dns1035_label() -> None:
    for good in ("a", "ab", "a-1", "a--1--2--b", "a" * 63):
        assert names.is_dns1035_label(good) == [], good
    for bad in ("0", "01", "1a", "1-a", "", "A", "a-", "a.b", "a" * 64):
        assert names.is_dns1035_label(bad), bad
    assert names.is_dns1035_label("1web") == [DNS1035_MSG]


@pytest.mark.parametrize(
    "value",
    ["simple", "now-with-dashes", "1-starts-with-num", "1234", "simple/simple",
     "now-with-dashes/simple", "now.with.dots/simple", "1-num.2-num/3-num", "1234/5678",
     "1.2.3.4/5678", "Uppercase_Is_OK_123", "example.com/Uppercase_Is_OK_123",
     "requests.storage-foo", "a" * 63, "a" * 253 + "/" + "b" * 63],
)  # fmt: skip
def test_qualified_name_good(value: str) -> None:
    assert names.is_qualified_name(value) == []


@pytest.mark.parametrize(
    "value",
    ["nospecialchars%^=@", "cantendwithadash-", "-cantstartwithadash-", "only/one/slash",
     "Example.com/abc", "example_com/abc", "example.com/", "/simple", "a" * 64,
     "a" * 254 + "/abc"],
)  # fmt: skip
def test_qualified_name_bad(value: str) -> None:
    assert names.is_qualified_name(value)


def test_qualified_name_messages() -> None:
    assert names.is_qualified_name("example.com/") == [
        "name part must be non-empty",
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
        "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
        "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    ]
    assert names.is_qualified_name("/simple") == ["prefix part must be non-empty"]
    assert names.is_qualified_name("Example.com/abc") == ["prefix part " + DNS1123_SUBDOMAIN_MSG]
    assert names.is_qualified_name("a" * 64) == ["name part must be no more than 63 characters"]


def test_label_values() -> None:
    for good in ("simple", "now-with-dashes", "1-starts-with-num", "end-with-num-1", "1234",
                 "a" * 63, ""):  # fmt: skip
        assert names.is_valid_label_value(good) == [], good
    for bad in ("nospecialchars%^=@", "Tama-nui-te-rā.is.Māori.sun", "\\backslashes\\are\\bad",
                "-starts-with-dash", "ends-with-dash-", ".starts.with.dot", "ends.with.dot.",
                "a" * 64):  # fmt: skip
        assert names.is_valid_label_value(bad), bad


def test_config_map_keys() -> None:
    for good in ("a", "good", "good-good", "still.good", "this.is.also.good", ".so.is.this",
                 "THIS_IS_GOOD", "so_is_this_17"):  # fmt: skip
        assert names.is_config_map_key(good) == [], good
    assert names.is_config_map_key(".") == ["must not be '.'"]
    assert names.is_config_map_key("..") == ["must not be '..'"]
    assert names.is_config_map_key("..bad") == ["must not start with '..'"]
    assert names.is_config_map_key("b*d") == [
        "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
        "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
        "'[-._a-zA-Z0-9]+')"
    ]


def test_port_names_and_numbers() -> None:
    for good in ("telnet", "re-mail-ck", "pop3", "a", "a-1", "1-a", "a-1-b-2-c", "1-a-2-b-3"):
        assert names.is_valid_port_name(good) == [], good
    for bad in ("longerthan15characters", "", "a" * 16, "12345", "1-2-3-4", "-begin", "end-",
                "two--hyphens", "whois++"):  # fmt: skip
        assert names.is_valid_port_name(bad), bad
    assert names.is_valid_port_name("two--hyphens") == ["must not contain consecutive hyphens"]
    assert names.is_valid_port_num(0) == ["must be between 1 and 65535, inclusive"]
    assert names.is_valid_port_num(65535) == []


def test_generate_name_masks_the_trailing_dash_as_upstream() -> None:
    # maskTrailingDash drops the last two characters for an "a": "web-" is checked as "wa"
    assert names.name_is_dns_subdomain("web-", True) == []
    assert names.name_is_dns_subdomain("web-", False) == [DNS1123_SUBDOMAIN_MSG]
    assert names.name_is_dns_label("Web-", True) == [DNS1123_LABEL_MSG]


def test_path_segment_names() -> None:
    assert names.path_segment_name("..", False) == ["may not be '..'"]
    assert names.path_segment_name("a/b%c", False) == ["may not contain '/'", "may not contain '%'"]
    assert names.path_segment_name("..", True) == []
    assert names.path_segment_name("system:admin", False) == []
