"""The server's options: its flags and configuration files, parsed and checked once
(upstream's ``k8s.io/apiserver/pkg/server/options``)."""
