"""RBAC (``plugin/pkg/auth/authorizer/rbac``, ``pkg/registry/rbac``): Role, ClusterRole,
RoleBinding and ClusterRoleBinding, read from the watch cache by ``informer``, matched
by ``policy_rule``, resolved per user by ``rule_resolver``; the bootstrap policy
(``proxy.kube.bootstrap.rbac_policy``)
reconciled at start, ClusterRole ``aggregation``, and ``escalation`` prevention."""
