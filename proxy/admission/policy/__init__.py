"""ValidatingAdmissionPolicy (k8s.io/apiserver/pkg/admission/plugin/policy)."""
