"""The objects kube-apiserver creates at start for its built-in kinds (upstream's
bootstrap data and post-start hooks): the system priority classes, the RBAC bootstrap
policy, API Priority and Fairness' bootstrap configuration, the system namespaces."""
