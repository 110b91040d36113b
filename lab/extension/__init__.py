"""The lab's own extension API server: ``metrics.k8s.io/v1beta1``, read-only, in
metrics-server's place (PodMetrics, NodeMetrics: ``kubectl top``), computed from the pods
the lab's watchcache serves from its watch cache, reached through API aggregation.

- ``metrics``: the objects (pure functions over pods) and their Table;
- ``server``: the HTTPS server: front-proxy authentication by client certificate
  (``--requestheader-*``, as a real aggregated server), delegated authorization
  (SubjectAccessReview to watchcache), discovery (legacy and aggregated), list/get/watch;
- ``launcher``: its PKI (serving CA, front-proxy CA and client certificate), its
  process, and its registration (an ExternalName Service and the APIService).
"""
