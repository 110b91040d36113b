"""The server: the aiohttp application, settings, the server-wide context, the filter
chain around the handlers, health checks and post-start hooks (k8s.io/apiserver/pkg/server)."""
