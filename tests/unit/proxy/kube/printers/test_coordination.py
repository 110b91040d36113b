"""coordination.k8s.io rows: leases."""

from __future__ import annotations

from tests.unit.proxy.printers.support import cells
from tests.unit.proxy.resources import Res


def test_lease_row() -> None:
    lease = {"metadata": {"name": "l"}, "spec": {"holderIdentity": "node-1"}}
    assert cells(Res("coordination.k8s.io", "v1", "Lease", "leases"), lease) == [
        "l", "node-1", "<unknown>",
    ]  # fmt: skip
