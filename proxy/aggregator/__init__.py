"""API aggregation (``apiregistration.k8s.io/v1``), shaped like ``k8s.io/kube-aggregator``.

- ``apiservice``: the APIService object: validation, the create/update strategy, its
  conditions, and the local APIServices kube-apiserver registers for its built-in groups;
- ``autoregister``: keeps those local APIServices stored (kube-apiserver's
  ``autoregister`` controller);
- ``lister``: the APIServices in memory, from the watch cache (list, then watch);
- ``proxy.admission.webhook.service_resolver`` (shared with the webhooks): where a
  ``spec.service`` reference lands (endpoints with ``--enable-aggregator-routing``, else
  the Service's cluster IP or external name);
- ``availability``: the ``Available`` condition from health checks of the backends;
- ``proxy_handler``: ``/apis/<group>/<version>/...`` proxied to the extension server
  with the front-proxy client certificate and the ``X-Remote-*`` identity headers;
- ``discovery``: the extension servers' discovery merged into ``/apis`` (legacy and
  aggregated) and ``/openapi/v3``;
- ``server``: the wiring (``Aggregator``), started and stopped with the app.
"""
