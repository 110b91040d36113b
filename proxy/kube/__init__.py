"""Kube's built-in kinds (upstream's ``k8s.io/kubernetes/pkg``): what each built-in
kind brings to the generic server library — its defaulting (``defaulting``), and, as
the house is rebuilt (issue 22), its strategies, validation, printers and bootstrap.

Nothing in the generic library imports this package; the composition root wires it in.
"""
