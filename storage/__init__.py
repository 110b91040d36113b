"""Kubernetes storage semantics over etcd: interface, errors, keys, codec, selectors,
continue tokens, and the etcd3 store (the uncached path)."""
