"""API discovery: the legacy documents and aggregated discovery (apidiscovery.k8s.io/v2)."""
