"""Which webhooks a request goes to (kube's ``webhook/predicates``): the rules
(operations, apiGroups, apiVersions, resources with ``*`` and subresource forms,
scope), ``matchPolicy``, and the namespace and object selectors.

``matchPolicy: Equivalent`` (the default) matches a rule naming another version of the
same group and resource; this server serves one version of each resource, so any
version of it is the equivalent one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from proxy.admission.attributes import Attributes
from proxy.authorization.rbac.label_selector import selector_matches

__all__ = ["namespace_selector_matches", "object_selector_matches", "rules_match"]

JSON = dict[str, Any]


def _matches(values: Any, value: str) -> bool:
    return any(v == "*" or v == value for v in values or ())


def _resource_matches(patterns: Any, resource: str, subresource: str) -> bool:
    for pattern in patterns or ():
        res, _, sub = str(pattern).partition("/")
        if pattern == "*/*":
            return True
        if not sub and res in ("*", resource) and not subresource:
            return True
        if sub and subresource and res in ("*", resource) and sub in ("*", subresource):
            return True
    return False


def _scope_matches(scope: str, attrs: Attributes) -> bool:
    if scope in ("", "*"):
        return True
    namespaced = attrs.resource.namespaced
    if attrs.resource.group == "" and attrs.resource.plural == "namespaces":
        namespaced = False
    return (scope == "Namespaced") == namespaced


# Kinds never sent to a webhook (upstream's IsExemptAdmissionConfigurationResource): a
# webhook must not be able to block or change the objects that configure admission,
# else one broken webhook could never be removed.
_EXEMPT_KINDS = frozenset({
    "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
    "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
})  # fmt: skip


def is_exempt_admission_configuration(attrs: Attributes) -> bool:
    group, _, kind = attrs.kind
    return group == "admissionregistration.k8s.io" and kind in _EXEMPT_KINDS


def rules_match(rules: Any, attrs: Attributes, match_policy: str) -> bool:
    """Whether any rule covers the request."""
    for rule in rules or ():
        if not _matches(rule.get("operations"), attrs.operation):
            continue
        if not _matches(rule.get("apiGroups"), attrs.resource.group):
            continue
        version_ok = _matches(rule.get("apiVersions"), attrs.resource.version)
        if not version_ok and match_policy != "Exact":
            version_ok = bool(rule.get("apiVersions"))  # the served version is equivalent
        if not version_ok:
            continue
        if not _resource_matches(rule.get("resources"), attrs.resource.plural, attrs.subresource):
            continue
        if _scope_matches(str(rule.get("scope") or "*"), attrs):
            return True
    return False


def _labels(obj: Mapping[str, Any] | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


def object_selector_matches(selector: JSON | None, attrs: Attributes) -> bool:
    """The object selector is tried on the object and on the old object: either
    matching is a match (kube's ``objectmatcher``)."""
    if not selector:
        return True
    candidates = [o for o in (attrs.object, attrs.old_object) if o is not None]
    return any(selector_matches(selector, _labels(o)) for o in candidates)


def namespace_selector_matches(selector: JSON | None, attrs: Attributes,
                               namespace: JSON | None) -> bool:
    """A cluster-scoped object always matches; a Namespace matches on its own labels;
    a namespaced object on its namespace's labels."""
    if not selector:
        return True
    if attrs.resource.group == "" and attrs.resource.plural == "namespaces":
        obj = attrs.object or attrs.old_object
        return selector_matches(selector, _labels(obj))
    if not attrs.resource.namespaced:
        return True
    return selector_matches(selector, _labels(namespace))
