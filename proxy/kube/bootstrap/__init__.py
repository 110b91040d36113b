"""The objects kube-apiserver creates at start for its built-in kinds (upstream's
bootstrap data and post-start hooks): the system priority classes, the RBAC bootstrap
policy, API Priority and Fairness' bootstrap configuration, the system namespaces; and
the bootstrap controllers (``controllers``): the ``default/kubernetes`` Service with its
Endpoints and EndpointSlice (``kubernetes_service``) and
``kube-system/extension-apiserver-authentication`` (``cluster_authentication``), which
write through ``writer.BootstrapWriter`` (straight into the storages today; the seam for
the in-process loopback client)."""
