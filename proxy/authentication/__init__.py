"""Authentication: who is making the request (``k8s.io/apiserver/pkg/authentication``).

One module per authenticator (x509 client certificates, static tokens, service-account
JWTs, anonymous), ``union`` to chain them, ``filter`` to run the chain on the secure port
and store the ``UserInfo`` on the request, ``impersonation`` for ``Impersonate-*``.
"""
