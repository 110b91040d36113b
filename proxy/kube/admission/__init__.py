"""kube-apiserver's built-in admission plugins for kube's own kinds (upstream's
``plugin/pkg/admission``): AlwaysAdmit/AlwaysDeny, NamespaceLifecycle, LimitRanger,
ServiceAccount, PodSecurity, Priority, DefaultTolerationSeconds, CertificateApproval,
CertificateSigning, CertificateSubjectRestriction, ResourceQuota;
``plugins`` registers them (``RegisterAllAdmissionPlugins``)."""
