"""The PodSecurity admission plugin (k8s.io/pod-security-admission)."""
