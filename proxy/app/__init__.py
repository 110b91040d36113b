"""The composition root (upstream's ``cmd/kube-apiserver/app``): builds the server from
the generic library, kube's kinds, the apiextensions server and the aggregator — the
only package that imports them all. ``server`` is ``watchcache serve``; ``kinds``
registers the built-in kinds and admission plugins; ``admission`` wires the chain."""
