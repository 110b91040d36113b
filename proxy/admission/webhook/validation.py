"""A webhook's client config, as ``k8s.io/apiserver/pkg/util/webhook`` validates it
(``ValidateWebhookURL``, ``ValidateWebhookService``): exactly one of ``url`` or
``service``; an https URL with a host and no user, query or fragment; a service with
name, namespace, a valid port and a ``/``-path. Admission webhook configurations and a
CRD's conversion webhook share it."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from proxy.apimachinery.validation import field
from proxy.apimachinery.validation.field import ErrorList
from proxy.apimachinery.validation.names import is_dns1123_subdomain, is_valid_port_num

__all__ = ["validate_client_config", "validate_service", "validate_url"]

JSON = dict[str, Any]
_FORM = "; desired format: https://host[/path]"


def _dict(value: object) -> JSON:
    return value if isinstance(value, dict) else {}


def validate_url(url: str, path: str) -> ErrorList:
    """``ValidateWebhookURL`` with https forced."""
    try:
        parts = urlsplit(url)
    except ValueError:  # urlsplit's only refusal: an unclosed IPv6 literal
        reason = "missing ']' in host"
        detail = f"url must be a valid URL: parse {field.go_quote(url)}: {reason}{_FORM}"
        return [field.required(path, detail)]
    errs: ErrorList = []
    user, _, host = parts.netloc.rpartition("@")
    if parts.scheme != "https":
        scheme = "'https' is the only allowed URL scheme"
        errs.append(field.invalid(path, parts.scheme, scheme + _FORM))
    if not host:
        errs.append(field.invalid(path, host, "host must be specified" + _FORM))
    if "@" in parts.netloc:
        errs.append(field.invalid(path, user, "user information is not permitted in the URL"))
    if parts.fragment:
        errs.append(field.invalid(path, parts.fragment, "fragments are not permitted in the URL"))
    if parts.query:
        errs.append(
            field.invalid(path, parts.query, "query parameters are not permitted in the URL")
        )
    return errs


def _service_path(url_path: str, path: str) -> ErrorList:
    if url_path in ("", "/"):
        return []
    if url_path == "//":
        return [field.invalid(path, url_path, "segment[0] may not be empty")]
    errs: ErrorList = []
    if not url_path.startswith("/"):
        errs.append(field.invalid(path, url_path, "must start with a '/'"))
    check = url_path[1:]
    if check.endswith("/"):
        check = check[:-1]
    for i, step in enumerate(check.split("/")):
        if not step:
            errs.append(field.invalid(path, url_path, f"segment[{i}] may not be empty"))
            continue
        errs += [field.invalid(path, url_path, f"segment[{i}]: {m}")
                 for m in is_dns1123_subdomain(step)]  # fmt: skip
    return errs


def validate_service(service: JSON, path: str) -> ErrorList:
    """``ValidateWebhookService`` (port defaults to 443)."""
    errs: ErrorList = []
    if not service.get("name"):
        errs.append(field.required(field.child(path, "name"), "service name is required"))
    if not service.get("namespace"):
        errs.append(field.required(field.child(path, "namespace"), "service namespace is required"))
    port = service.get("port", 443)
    if isinstance(port, int) and (failures := is_valid_port_num(port)):
        errs.append(field.invalid(field.child(path, "port"), port,
                                  "port is not valid: " + ", ".join(failures)))  # fmt: skip
    svc_path = service.get("path")
    if isinstance(svc_path, str):
        errs += _service_path(svc_path, field.child(path, "path"))
    return errs


def validate_client_config(client: JSON, path: str) -> ErrorList:
    """Exactly one of ``url`` and ``service``, each checked as upstream."""
    url, service = client.get("url"), client.get("service")
    if (url is None) == (service is None):
        return [field.required(path, "exactly one of url or service is required")]
    if url is not None:
        return validate_url(str(url), field.child(path, "url"))
    return validate_service(_dict(service), field.child(path, "service"))
