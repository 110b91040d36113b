"""Storage error → Status translation, word for word (upstream's
``k8s.io/apiserver/pkg/storage/errors/storage.go`` and ``apimachinery/pkg/api/errors``)."""

from __future__ import annotations

from proxy import apierrors
from storage import errors as serr


def test_not_found_and_already_exists() -> None:
    e = apierrors.from_storage_error(
        serr.NotFound("/registry/deployments/a/x"), "deployments.apps", "x"
    )
    assert (e.code, e.reason, e.message) == (404, "NotFound", 'deployments.apps "x" not found')
    assert e.body["details"] == {"name": "x", "group": "apps", "kind": "deployments"}
    e = apierrors.from_storage_error(serr.AlreadyExists("/k"), "pods", "x")
    assert (e.code, e.reason, e.message) == (409, "AlreadyExists", 'pods "x" already exists')


def test_conflict_and_precondition() -> None:
    e = apierrors.from_storage_error(serr.Conflict("/k"), "pods", "x")
    assert e.code == 409 and e.reason == "Conflict"
    assert e.message == (
        'Operation cannot be fulfilled on pods "x": the object has been modified; please apply '
        "your changes to the latest version and try again"
    )
    detail = "Precondition failed: UID in precondition: B, UID in object meta: A"
    e = apierrors.from_storage_error(serr.PreconditionFailed(detail, "/k"), "pods", "x")
    assert e.message == f'Operation cannot be fulfilled on pods "x": {detail}'


def test_too_large_resource_version() -> None:
    e = apierrors.from_storage_error(serr.TooLargeResourceVersion(10, 7), "pods")
    assert e.code == 504 and e.reason == "Timeout"
    assert e.message == "Timeout: Too large resource version: 10, current: 7"
    assert e.body["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
    assert e.body["details"]["retryAfterSeconds"] == 1
    assert e.headers == {"Retry-After": "1"}


def test_expired_with_continue_and_not_ready() -> None:
    e = apierrors.from_storage_error(serr.Expired("too old", continue_token="tok"), "pods")
    assert (e.code, e.reason) == (410, "Expired")
    assert e.body["metadata"] == {"continue": "tok"}
    e = apierrors.from_storage_error(serr.NotReady(retry_after=2), "pods")
    assert (e.code, e.reason, e.message) == (429, "TooManyRequests", "storage is (re)initializing")
    assert e.headers["Retry-After"] == "2"


def test_unavailable_is_the_timeout_filters_answer_without_retry_after() -> None:
    """etcd unreachable: kube-apiserver's client waits on etcd until its deadline and
    gets the timeout filter's 504 with no Retry-After, which client-go does not retry."""
    for err in (serr.Unavailable("deadline", timeout=True), serr.Unavailable("refused")):
        e = apierrors.from_storage_error(err, "pods")
        assert (e.code, e.reason, e.message) == (
            504,
            "Timeout",
            "Timeout: request did not complete within the allotted timeout",
        )
        # the timeout filter's Status carries empty details (seen on kube-apiserver)
        assert e.body.get("details") == {} and e.headers == {}


def test_internal() -> None:
    e = apierrors.from_storage_error(serr.InternalStorageError("bad value", "/k"), "pods")
    assert e.code == 500 and e.message == "Internal error occurred: bad value"


def test_invalid_aggregates_like_apimachinery() -> None:
    errs = [
        apierrors.FieldError.forbidden("a", "no"),
        apierrors.FieldError.not_supported("b", "x", ["Exact", ""]),
    ]
    e = apierrors.invalid("ListOptions.meta.k8s.io", "", errs)
    assert e.message == (
        'ListOptions.meta.k8s.io "" is invalid: [a: Forbidden: no, b: Unsupported value: "x": '
        'supported values: "Exact", ""]'
    )
    assert e.body["details"]["causes"][1] == {
        "reason": "FieldValueNotSupported",
        "message": 'Unsupported value: "x": supported values: "Exact", ""',
        "field": "b",
    }
