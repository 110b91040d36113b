"""Authorization: may this user do this (``k8s.io/apiserver/pkg/authorization``).

``authorizer`` (attributes, decisions, the interfaces), ``modes`` (AlwaysAllow,
AlwaysDeny, the privileged-group shortcut, the union that chains them), ``filter`` (the
request filter and its 403), ``rbac/`` (the RBAC authorizer over the watch cache, the
bootstrap policy, aggregation, escalation checks), ``review`` (the
authorization.k8s.io and authentication.k8s.io review APIs).
"""
