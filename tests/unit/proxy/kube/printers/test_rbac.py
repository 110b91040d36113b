"""rbac.authorization.k8s.io rows: roles and bindings."""

from __future__ import annotations

from proxy.printers.table import to_table
from tests.unit.proxy.printers.support import NOW, ago, cells
from tests.unit.proxy.resources import Res


def test_rbac_rows() -> None:
    rbac = "rbac.authorization.k8s.io"
    role = {"metadata": {"name": "r", "creationTimestamp": "2026-01-10T11:00:00+01:00"}}
    table = to_table(Res(rbac, "v1", "ClusterRole", "clusterroles"), [role], now=NOW)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Created At"]
    assert table["rows"][0]["cells"] == ["r", "2026-01-10T10:00:00Z"]
    binding = {
        "metadata": {"name": "b", "creationTimestamp": ago(minutes=1)},
        "roleRef": {"kind": "ClusterRole", "name": "view"},
        "subjects": [
            {"kind": "User", "name": "alice"},
            {"kind": "Group", "name": "devs"},
            {"kind": "ServiceAccount", "name": "bot", "namespace": "ci"},
            {"kind": "User", "name": "bob"},
        ],
    }
    assert cells(Res(rbac, "v1", "RoleBinding", "rolebindings"), binding) == [
        "b", "ClusterRole/view", "60s", "alice, bob", "devs", "ci/bot",
    ]  # fmt: skip
