"""MutatingAdmissionWebhook and ValidatingAdmissionWebhook
(k8s.io/apiserver/pkg/admission/plugin/webhook)."""
