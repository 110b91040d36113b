"""Kube's built-in kinds (upstream's ``k8s.io/kubernetes/pkg``): what each built-in kind
brings to the generic server library — defaulting (``defaulting``), validation
(``validation``), Table printers (``printers``), the built-in admission plugins
(``admission``) and the bootstrap objects and controllers (``bootstrap``: RBAC policy,
APF configuration, priority classes, system namespaces, the kubernetes Service, the
extension-apiserver-authentication ConfigMap).

Nothing in the generic library imports this package, and it imports neither
``proxy.apiextensions`` nor ``proxy.aggregator``; the composition root (``proxy.app``)
wires it in.
"""
