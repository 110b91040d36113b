"""The namespace controller kube-controller-manager runs (upstream's
``pkg/controller/namespace``), run by the server itself unless
``--lifecycle-controllers`` says an external one does: ``controller`` (the informer,
queue and workers) and ``deletion`` (emptying a namespace, its status conditions)."""
