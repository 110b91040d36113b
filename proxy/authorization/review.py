"""The authorization.k8s.io review APIs (``pkg/registry/authorization``), create-only and
never stored:

- SelfSubjectAccessReview: may I? (``kubectl auth can-i``);
- SubjectAccessReview: may this user (``spec.user``/``groups``/``uid``/``extra``)?
- LocalSubjectAccessReview: the same, within the URL's namespace;
- SelfSubjectRulesReview: what may I do in ``spec.namespace`` (``can-i --list``).

Each answers the posted object with its ``status`` filled in: ``allowed``, ``denied``
(an authorizer said Deny), ``reason``; for rules: ``resourceRules``,
``nonResourceRules``, ``incomplete``, ``evaluationError``. Invalid specs are 422 with
upstream's field errors.
"""

from __future__ import annotations

from typing import Any

from proxy import apierrors
from proxy.apierrors import FieldError
from proxy.authorization.authorizer import Attributes, Decision
from proxy.authorization.decision import authorize
from proxy.authorization.modes import Union
from proxy.request.user import UserInfo

__all__ = ["access_review", "rules_review"]

JSON = dict[str, Any]

_KIND_GROUP = "authorization.k8s.io"


def _invalid(kind: str, errors: list[FieldError]) -> apierrors.StatusError:
    return apierrors.invalid(f"{kind}.{_KIND_GROUP}", "", errors)


def _attributes_from_spec(user: UserInfo, spec: JSON, kind: str) -> Attributes:
    resource = spec.get("resourceAttributes")
    non_resource = spec.get("nonResourceAttributes")
    if (resource is None) == (non_resource is None):
        raise _invalid(
            kind,
            [
                FieldError.invalid(
                    "spec.resourceAttributes",
                    "null" if resource is None else resource,
                    "exactly one of nonResourceAttributes or resourceAttributes must be specified",
                )
            ],
        )
    if isinstance(non_resource, dict):
        return Attributes(
            user=user,
            verb=str(non_resource.get("verb", "")),
            resource_request=False,
            path=str(non_resource.get("path", "")),
        )
    assert isinstance(resource, dict)
    return Attributes(
        user=user,
        verb=str(resource.get("verb", "")),
        namespace=str(resource.get("namespace", "")),
        api_group=str(resource.get("group", "")),
        api_version=str(resource.get("version", "")),
        resource=str(resource.get("resource", "")),
        subresource=str(resource.get("subresource", "")),
        name=str(resource.get("name", "")),
    )


def _spec_user(spec: JSON, kind: str) -> UserInfo:
    name = str(spec.get("user") or "")
    groups = tuple(str(g) for g in spec.get("groups") or ())
    if not name and not groups:
        raise _invalid(
            kind,
            [
                FieldError.invalid(
                    "spec.user",
                    "",
                    "at least one of user or group must be specified",
                )
            ],
        )
    extra = {str(k): tuple(str(v) for v in vs or ()) for k, vs in (spec.get("extra") or {}).items()}
    return UserInfo(name=name, uid=str(spec.get("uid") or ""), groups=groups, extra=extra)


def access_review(
    authorizer: Union, requestor: UserInfo, obj: JSON, kind: str, namespace: str = ""
) -> JSON:
    """Answer a (Self|Local)SubjectAccessReview ``obj`` (returned with its status)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    user = requestor if kind == "SelfSubjectAccessReview" else _spec_user(spec, kind)
    attrs = _attributes_from_spec(user, spec, kind)
    if kind == "LocalSubjectAccessReview":
        if not attrs.resource_request:
            raise _invalid(
                kind,
                [
                    FieldError.invalid(
                        "spec.nonResourceAttributes",
                        spec["nonResourceAttributes"],
                        "disallowed on this kind of request",
                    )
                ],
            )
        if attrs.namespace and attrs.namespace != namespace:
            raise apierrors.bad_request(
                f"spec.resourceAttributes.namespace must match namespace: {namespace}"
            )
        if not attrs.namespace:
            spec.setdefault("resourceAttributes", {})["namespace"] = namespace
            attrs = _attributes_from_spec(user, spec, kind)
    decision, reason = authorize(authorizer, attrs)
    status: JSON = {"allowed": decision is Decision.ALLOW}
    if decision is Decision.DENY:
        status["denied"] = True
    if reason:
        status["reason"] = reason
    return _answer(obj, kind, spec, status)


def rules_review(authorizer: Union, requestor: UserInfo, obj: JSON) -> JSON:
    """Answer a SelfSubjectRulesReview ``obj``."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    namespace = str(spec.get("namespace") or "")
    result = authorizer.rules_for(requestor, namespace)
    resource_rules = []
    for r in result.resource_rules:
        rule: JSON = {"verbs": list(r.verbs)}
        if r.api_groups:
            rule["apiGroups"] = list(r.api_groups)
        if r.resources:
            rule["resources"] = list(r.resources)
        if r.resource_names:
            rule["resourceNames"] = list(r.resource_names)
        resource_rules.append(rule)
    non_resource_rules = [
        {"verbs": list(r.verbs), "nonResourceURLs": list(r.non_resource_urls)}
        for r in result.non_resource_rules
    ]
    status: JSON = {
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": result.incomplete,
    }
    if result.errors:
        status["evaluationError"] = ", ".join(result.errors)
    return _answer(obj, "SelfSubjectRulesReview", spec, status)


def _answer(obj: JSON, kind: str, spec: JSON, status: JSON) -> JSON:
    metadata = dict(obj.get("metadata") or {})
    metadata.setdefault("creationTimestamp", None)
    return {
        "kind": kind,
        "apiVersion": f"{_KIND_GROUP}/v1",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    }
