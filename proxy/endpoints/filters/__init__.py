"""The request filters that answer for authentication, impersonation and
authorization (upstream's ``k8s.io/apiserver/pkg/endpoints/filters``)."""
