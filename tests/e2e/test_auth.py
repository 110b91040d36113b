"""The real kubectl and the official Python client over HTTPS, with each kind of
credential (client certificate, static token, service-account token, none), against a
server with ``--secure-port``, ``--client-ca-file``, ``--token-auth-file`` and RBAC:
401/403 with upstream's Status, ``auth can-i`` (``--list``, ``--as``), ``auth whoami``,
``create token``, impersonation, escalation prevention, and the bootstrap policy."""

from __future__ import annotations

import json
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
import pytest

from lab.etcd import EtcdCluster
from proxy.authentication.service_account import key_id, load_private_key
from proxy.server.certs import new_ca, sign
from tests.csr import csr_object, new_request
from tests.e2e.conftest import KUBECTL
from tests.integration.conftest import ServerProcess, start_server


@dataclass
class Secure:
    server: ServerProcess
    dir: Path
    kubeconfig: Path

    @property
    def ca(self) -> str:
        return str(self.dir / "certs" / "apiserver.crt")


def _kubeconfig(d: Path, url: str) -> Path:
    users = {
        "admin": {"client-certificate": str(d / "admin.crt"), "client-key": str(d / "admin.key")},
        "alice": {"client-certificate": str(d / "alice.crt"), "client-key": str(d / "alice.key")},
        "bob": {"token": "bob-token"},
        "anonymous": {},
    }
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "wc", "cluster": {
            "server": url, "certificate-authority": str(d / "certs" / "apiserver.crt")}}],
        "users": [{"name": n, "user": u} for n, u in users.items()],
        "contexts": [{"name": n, "context": {"cluster": "wc", "user": n, "namespace": "default"}}
                     for n in users],
        "current-context": "admin",
    }  # fmt: skip
    path = d / "kubeconfig"
    path.write_text(json.dumps(config))
    return path


@pytest.fixture(scope="module")
def secure(etcd: EtcdCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secure]:
    d = tmp_path_factory.mktemp("secure")
    ca = new_ca("e2e-client-ca")
    (d / "ca.crt").write_bytes(ca.cert_pem)
    sign(ca, "root", organizations=["system:masters"], client=True).write(
        d / "admin.crt", d / "admin.key"
    )
    sign(ca, "alice", organizations=["devs"], client=True).write(d / "alice.crt", d / "alice.key")
    (d / "tokens.csv").write_text('bob-token,bob,uid-bob,"readers"\n')
    server = start_server(
        etcd.endpoints,
        None,
        "--secure-port=0",
        f"--cert-dir={d / 'certs'}",
        f"--client-ca-file={d / 'ca.crt'}",
        f"--token-auth-file={d / 'tokens.csv'}",
    )
    try:
        yield Secure(server, d, _kubeconfig(d, server.secure_url))
    finally:
        server.stop()


def kubectl(
    s: Secure, *args: str, user: str = "admin", stdin: str | None = None
) -> tuple[int, str]:
    proc = subprocess.run(
        [str(KUBECTL), f"--kubeconfig={s.kubeconfig}", f"--context={user}", *args],
        capture_output=True, text=True, input=stdin, timeout=60,
    )  # fmt: skip
    return proc.returncode, (proc.stdout + proc.stderr).strip()


def _get(s: Secure, path: str, token: str = "") -> tuple[int, dict[str, Any] | str]:
    ctx = ssl.create_default_context(cafile=s.ca)
    req = urllib.request.Request(s.server.secure_url + path)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
            body = resp.read().decode()
            code = resp.status
    except urllib.error.HTTPError as e:
        body, code = e.read().decode(), e.code
    try:
        return code, json.loads(body)
    except ValueError:
        return code, body


def bind(s: Secure, name: str, cluster_role: str, subject: dict[str, str]) -> None:
    """A RoleBinding in ``default`` to ``cluster_role``, applied by the admin (as JSON:
    ``kubectl create rolebinding`` sends protobuf)."""
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": "default"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": cluster_role},
        "subjects": [subject],
    }  # fmt: skip
    rc, out = kubectl(s, "apply", "-f", "-", stdin=json.dumps(binding))
    assert rc == 0, out


def _eventually(check: Any, timeout: float = 10.0) -> Any:
    """RBAC changes reach the authorizer through the informer's watch: poll briefly."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.1)


def test_plain_port_is_unchanged_and_secure_port_needs_credentials(secure: Secure) -> None:
    with urllib.request.urlopen(secure.server.url + "/api/v1/namespaces", timeout=10) as resp:
        assert resp.status == 200  # plain HTTP, no credentials, as before
    code, body = _get(secure, "/api/v1/pods")
    assert code == 403 and isinstance(body, dict)
    assert body["message"] == (
        'pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group '
        '"" at the cluster scope'
    )
    for path in ("/healthz", "/livez", "/readyz", "/version"):
        assert _get(secure, path)[0] == 200, path  # system:public-info-viewer
    assert _get(secure, "/metrics")[0] == 403
    code, body = _get(secure, "/api/v1/pods", token="wrong")
    assert code == 401 and isinstance(body, dict)
    assert (body["reason"], body["message"], body["code"]) == ("Unauthorized", "Unauthorized", 401)


def test_kubectl_with_each_credential(secure: Secure) -> None:
    rc, out = kubectl(secure, "get", "pods")
    assert rc == 0, out
    # (kubectl prompts for a password with no credentials at all: anonymous is curl's)
    rc, out = kubectl(secure, "get", "pods", user="bob")
    assert (
        rc != 0
        and (
            'Error from server (Forbidden): pods is forbidden: User "bob" cannot list resource '
            '"pods" in API group "" in the namespace "default"'
        )
        in out
    )
    rc, out = kubectl(secure, "auth", "whoami", "-o", "json", user="alice")
    assert rc == 0, out
    assert json.loads(out)["status"]["userInfo"] == {
        "username": "alice",
        "groups": ["devs", "system:authenticated"],
    }


def test_role_binding_grants_and_can_i(secure: Secure) -> None:
    rc, out = kubectl(secure, "auth", "can-i", "list", "pods", user="bob")
    assert (rc, out) == (1, "no")
    bind(secure, "readers-view", "view", {"kind": "Group", "name": "readers"})
    assert _eventually(lambda: kubectl(secure, "get", "pods", user="bob")[0] == 0)
    assert kubectl(secure, "auth", "can-i", "list", "pods", user="bob") == (0, "yes")
    assert kubectl(secure, "auth", "can-i", "list", "pods", "-n", "kube-system", user="bob")[0] == 1
    assert kubectl(secure, "auth", "can-i", "delete", "pods", user="bob")[0] == 1
    # non-resource URLs: the bootstrap policy's system:discovery and public-info-viewer
    assert kubectl(secure, "auth", "can-i", "get", "/healthz", user="bob") == (0, "yes")
    assert kubectl(secure, "auth", "can-i", "get", "/metrics", user="bob")[0] == 1
    # subresources: view reads pods/log but may not exec
    log = ("auth", "can-i", "get", "pods", "--subresource=log")
    assert kubectl(secure, *log, user="bob")[1] == "yes"
    assert kubectl(secure, "auth", "can-i", "create", "pods/exec", user="bob")[0] == 1
    rc, out = kubectl(secure, "auth", "can-i", "--list", user="bob")
    assert rc == 0 and "pods" in out and "[get list watch]" in out
    # --as: the admin may impersonate; alice may not
    assert (
        kubectl(secure, "auth", "can-i", "list", "pods", "--as=bob", "--as-group=readers")[1]
        == "yes"
    )
    rc, out = kubectl(secure, "get", "pods", "--as=bob", user="alice")  # 403 below
    assert (
        rc != 0
        and (
            'users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API '
            'group "" at the cluster scope'
        )
        in out
    )


@pytest.mark.parametrize(
    "apply", [("apply",), ("apply", "--server-side")], ids=["client-side", "create-on-apply"]
)
def test_escalation_is_prevented(secure: Secure, apply: tuple[str, ...]) -> None:
    """Upstream: a Role granting more than its creator holds is 403, whether created by
    a (client-side) apply or by a server-side apply's create-on-apply."""
    bind(secure, "alice-admin", "admin", {"kind": "User", "name": "alice"})
    assert _eventually(
        lambda: kubectl(secure, "auth", "can-i", "create", "roles", user="alice")[1] == "yes"
    )
    name = "node-peek" if len(apply) == 1 else "node-peek-ssa"
    role: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": name, "namespace": "default"},
        "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
                  {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    }  # fmt: skip
    rc, out = kubectl(secure, *apply, "-f", "-", stdin=json.dumps(role), user="alice")
    assert rc != 0
    assert (
        f'roles.rbac.authorization.k8s.io "{name}" is forbidden: user "alice" '
        '(groups=["devs" "system:authenticated"]) is attempting to grant RBAC permissions not '
        'currently held:\n{APIGroups:[""], Resources:["nodes"], Verbs:["get"]}'
    ) in out
    assert "NotFound" in kubectl(secure, "get", "role", name, "-n", "default")[1]
    role["rules"] = role["rules"][1:]
    rc, out = kubectl(secure, *apply, "-f", "-", stdin=json.dumps(role), user="alice")
    assert rc == 0, out


def test_service_account_token_with_kubectl_and_python_client(secure: Secure) -> None:
    sa = {"apiVersion": "v1", "kind": "ServiceAccount",
          "metadata": {"name": "robot", "namespace": "default"}}  # fmt: skip
    assert kubectl(secure, "apply", "-f", "-", stdin=json.dumps(sa))[0] == 0
    rc, token = kubectl(secure, "create", "token", "robot")
    assert rc == 0 and token.count(".") == 2, token
    rc, out = kubectl(secure, "auth", "whoami", "-o", "json", f"--token={token}", user="anonymous")
    assert rc == 0, out
    info = json.loads(out)["status"]["userInfo"]
    assert info["username"] == "system:serviceaccount:default:robot"
    groups = ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]
    assert info["groups"] == groups
    code, discovery = _get(secure, "/.well-known/openid-configuration", token=token)
    assert code == 200 and isinstance(discovery, dict)
    code, jwks = _get(secure, "/openid/v1/jwks", token=token)
    assert code == 200 and isinstance(jwks, dict) and jwks["keys"][0]["kty"] == "RSA"
    bind(secure, "robot-view", "view", {"kind": "ServiceAccount", "name": "robot",
                                        "namespace": "default"})  # fmt: skip

    from kubernetes import client

    config = client.Configuration()
    config.host = secure.server.secure_url
    config.ssl_ca_cert = secure.ca
    config.api_key = {"authorization": f"Bearer {token}"}
    with client.ApiClient(config) as api:
        core = client.CoreV1Api(api)

        def listed() -> bool:
            try:
                core.list_namespaced_pod("default")
            except client.ApiException:
                return False
            return True

        assert _eventually(listed)
        with pytest.raises(client.ApiException) as e:
            core.list_namespaced_secret("kube-system")
        assert e.value.status == 403
        message = json.loads(e.value.body or "")["message"]
        robot = 'User "system:serviceaccount:default:robot"'
        assert f'{robot} cannot list resource "secrets"' in message
    # a deleted service account's token stops working
    assert kubectl(secure, "delete", "serviceaccount", "robot")[0] == 0
    assert _eventually(
        lambda: _get(secure, "/api/v1/namespaces/default/pods", token=token)[0] == 401
    )


def _legacy_token(s: Secure, namespace: str, name: str, uid: str, secret: str) -> str:
    """What kube-controller-manager's token controller writes into a
    service-account-token Secret, signed with the key it is given (the server's)."""
    key = load_private_key(str(s.dir / "certs" / "service-account.key"))
    claims = {
        "iss": "kubernetes/serviceaccount",
        "kubernetes.io/serviceaccount/namespace": namespace,
        "kubernetes.io/serviceaccount/secret.name": secret,
        "kubernetes.io/serviceaccount/service-account.name": name,
        "kubernetes.io/serviceaccount/service-account.uid": uid,
        "sub": f"system:serviceaccount:{namespace}:{name}",
    }
    public = key.public_key()
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": key_id(public)})


def test_a_secret_based_legacy_service_account_token_authenticates(secure: Secure) -> None:
    """kube-controller-manager's legacy tokens: good while their Secret holds them and
    the ServiceAccount is the claimed one (pkg/serviceaccount/legacy.go)."""
    sa = {"apiVersion": "v1", "kind": "ServiceAccount",
          "metadata": {"name": "legacy", "namespace": "default"}}  # fmt: skip
    assert kubectl(secure, "apply", "-f", "-", stdin=json.dumps(sa))[0] == 0
    rc, uid = kubectl(secure, "get", "sa", "legacy", "-o", "jsonpath={.metadata.uid}")
    assert rc == 0, uid
    token = _legacy_token(secure, "default", "legacy", uid, "legacy-token")
    assert _get(secure, "/api/v1/namespaces/default/pods", token=token)[0] == 401  # no Secret
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
              "metadata": {"name": "legacy-token", "namespace": "default",
                           "annotations": {"kubernetes.io/service-account.name": "legacy"}},
              "stringData": {"token": token}}  # fmt: skip
    assert kubectl(secure, "apply", "-f", "-", stdin=json.dumps(secret))[0] == 0
    rc, out = kubectl(secure, "auth", "whoami", "-o", "json", f"--token={token}", user="anonymous")
    assert rc == 0, out
    assert json.loads(out)["status"]["userInfo"]["username"] == (
        "system:serviceaccount:default:legacy"
    )
    forged = _legacy_token(secure, "default", "legacy", "another-uid", "legacy-token")
    code, status = _get(secure, "/api/v1/namespaces/default/pods", token=forged)
    assert code == 401, status  # not the Secret's copy
    assert kubectl(secure, "delete", "secret", "legacy-token")[0] == 0
    assert _eventually(
        lambda: _get(secure, "/api/v1/namespaces/default/pods", token=token)[0] == 401
    )


def test_cluster_role_aggregation_follows_labelled_roles(secure: Secure) -> None:
    extra = {"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]}
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "widgets-view",
                     "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [extra],
    }  # fmt: skip

    def rules_of(name: str) -> list[dict[str, Any]]:
        rc, out = kubectl(secure, "get", "clusterrole", name, "-o", "json")
        assert rc == 0, out
        rules: list[dict[str, Any]] = json.loads(out).get("rules") or []
        return rules

    assert extra not in rules_of("view")
    assert kubectl(secure, "apply", "-f", "-", stdin=json.dumps(role))[0] == 0
    # view aggregates it, and edit and admin aggregate view's rules in turn
    assert _eventually(lambda: extra in rules_of("view") and extra in rules_of("admin"))
    assert kubectl(secure, "delete", "clusterrole", "widgets-view")[0] == 0
    assert _eventually(lambda: extra not in rules_of("view"))


def _csr_body(name: str, org: str) -> str:
    """A kube-apiserver-client CSR for ``name`` in group ``org`` (a throwaway key)."""
    return json.dumps(csr_object(name, new_request(name, org)[1], ["client auth"]))


def test_certificate_admission(secure: Secure) -> None:
    """CertificateApproval: updating /approval is not enough, approving needs the
    ``approve`` verb on the signer; CertificateSubjectRestriction: no system:masters
    through the client signer."""
    approver: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "csr-approver"},
        "rules": [{"apiGroups": ["certificates.k8s.io"], "verbs": ["get", "list", "update"],
                   "resources": ["certificatesigningrequests",
                                 "certificatesigningrequests/approval"]}]}  # fmt: skip
    assert kubectl(secure, "apply", "-f", "-", stdin=json.dumps(approver))[0] == 0
    assert kubectl(secure, "create", "clusterrolebinding", "alice-approves",
                   "--clusterrole=csr-approver", "--user=alice")[0] == 0  # fmt: skip
    assert kubectl(secure, "apply", "-f", "-", stdin=_csr_body("dave", "devs"))[0] == 0
    rc, out = kubectl(secure, "certificate", "approve", "dave", user="alice")
    assert rc != 0 and out.endswith(
        'certificatesigningrequests.certificates.k8s.io "dave" is forbidden: user not '
        'permitted to approve requests with signerName "kubernetes.io/kube-apiserver-client"')
    signers = {"apiGroups": ["certificates.k8s.io"], "resources": ["signers"],
               "resourceNames": ["kubernetes.io/*"], "verbs": ["approve"]}  # fmt: skip
    approver["rules"].append(signers)
    assert kubectl(secure, "apply", "-f", "-", stdin=json.dumps(approver))[0] == 0
    assert _eventually(lambda: kubectl(secure, "certificate", "approve", "dave",
                                       user="alice")[0] == 0)  # fmt: skip

    rc, out = kubectl(secure, "apply", "-f", "-", stdin=_csr_body("root2", "system:masters"))
    assert rc != 0 and out.endswith(
        'certificatesigningrequests.certificates.k8s.io "root2" is forbidden: use of '
        "kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed")


def _post(
    s: Secure, path: str, body: dict[str, Any], token: str, accept: str = "application/json"
) -> tuple[int, dict[str, Any]]:
    """POST ``body`` as JSON over HTTPS with a bearer token: (code, decoded answer)."""
    req = urllib.request.Request(
        s.server.secure_url + path, data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Bearer {token}", "Accept": accept,
                 "Content-Type": "application/json"},
    )  # fmt: skip
    ctx = ssl.create_default_context(cafile=s.ca)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_a_review_asked_as_table_is_406(secure: Secure) -> None:
    """Upstream's conformance spec "should return a 406 for a backend which does not
    implement metadata": a review has no Table convertor."""
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"nonResourceAttributes": {"path": "/", "verb": "get"}}}  # fmt: skip
    path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    for accept, code in (("application/json;as=Table;v=v1;g=meta.k8s.io", 406),
                         ("application/json", 201)):  # fmt: skip
        got, body = _post(secure, path, review, "bob-token", accept)
        assert got == code, body
    assert body["kind"] == "SelfSubjectAccessReview" and "allowed" in body["status"]


def _ssar(resource: str) -> dict[str, Any]:
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": "get", "resource": resource}}}  # fmt: skip


def test_reviews_and_token_requests_pass_admission(secure: Secure) -> None:
    """A review and a TokenRequest are creates like any other (upstream's ``rest.Creater``
    and ``NamedCreater`` behind the generic create handler): a ValidatingAdmissionPolicy
    matching ``selfsubjectaccessreviews`` and ``serviceaccounts/token`` sees them, with
    the subresource's own kind (TokenRequest), and its denial is the answer."""
    name = "deny-held-reviews-and-tokens"
    expression = (
        "request.kind.kind == 'TokenRequest' ? object.spec.expirationSeconds != 4321 : "
        "object.spec.resourceAttributes.resource != 'held'"
    )
    policy = {"apiVersion": "admissionregistration.k8s.io/v1",
              "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name},
              "spec": {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": [
                  {"apiGroups": ["authorization.k8s.io"], "apiVersions": ["v1"],
                   "operations": ["CREATE"], "resources": ["selfsubjectaccessreviews"]},
                  {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                   "resources": ["serviceaccounts/token"]}]},
                  "validations": [{"expression": expression, "message": "held"}]}}  # fmt: skip
    binding = {"apiVersion": "admissionregistration.k8s.io/v1",
               "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name},
               "spec": {"policyName": name, "validationActions": ["Deny"]}}  # fmt: skip
    sa = {"apiVersion": "v1", "kind": "ServiceAccount",
          "metadata": {"name": "held-robot", "namespace": "default"}}  # fmt: skip
    for obj in (sa, policy, binding):
        rc, out = kubectl(secure, "apply", "-f", "-", stdin=json.dumps(obj))
        assert rc == 0, out
    path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    try:
        # the policy is in force once the server has seen it
        assert _eventually(lambda: _post(secure, path, _ssar("held"), "bob-token")[0] == 422)
        code, status = _post(secure, path, _ssar("held"), "bob-token")
        assert code == 422 and "denied request: held" in status["message"], status
        assert _post(secure, path, _ssar("pods"), "bob-token")[0] == 201
        assert _post(secure, f"{path}/named", _ssar("pods"), "bob-token")[0] == 404
        rc, out = kubectl(secure, "create", "token", "held-robot", "--duration=4321s")
        assert rc != 0 and "denied request: held" in out, out
        rc, out = kubectl(secure, "create", "token", "held-robot", "--duration=4322s")
        assert rc == 0 and out.count(".") == 2, out
    finally:
        for kind in ("validatingadmissionpolicybinding", "validatingadmissionpolicy"):
            kubectl(secure, "delete", kind, name)
        kubectl(secure, "delete", "serviceaccount", "held-robot")


def test_extension_apiserver_authentication_publishes_the_client_ca(secure: Secure) -> None:
    """Components serving their own HTTPS read the client CA from
    kube-system/extension-apiserver-authentication, as kube-apiserver publishes it."""
    name = "configmap/extension-apiserver-authentication"

    def published() -> dict[str, Any] | None:
        rc, out = kubectl(secure, "get", name, "-n", "kube-system", "-o", "json")
        return json.loads(out) if rc == 0 else None

    cm = _eventually(published)
    assert cm is not None
    assert cm["data"] == {"client-ca-file": (secure.dir / "ca.crt").read_text()}
