"""OpenAPI v3 documents and the Kubernetes API schemas they are built from."""
