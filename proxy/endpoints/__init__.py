"""The REST endpoints (k8s.io/apiserver/pkg/endpoints): request info, content
negotiation, request metrics, the resource handlers and discovery."""
