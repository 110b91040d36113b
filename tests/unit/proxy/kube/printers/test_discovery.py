"""discovery.k8s.io rows: endpointslices (kubectl's printEndpointSlice)."""

from __future__ import annotations

from tests.unit.proxy.printers.support import cells
from tests.unit.proxy.resources import Res

SLICES = Res("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices")


def test_endpoint_slice_row_shows_three_then_more() -> None:
    endpoints = [{"addresses": [f"10.0.0.{i}"]} for i in range(1, 6)]
    ports = [{"name": "http", "port": 80}, {"name": "named"}]
    row = {"metadata": {"name": "web-x1"}, "addressType": "IPv4", "ports": ports,
           "endpoints": endpoints}  # fmt: skip
    assert cells(SLICES, row) == ["web-x1", "IPv4", "80,named",
                                  "10.0.0.1,10.0.0.2,10.0.0.3 + 2 more...", "<unknown>"]


def test_an_empty_slice_is_unset() -> None:
    row = {"metadata": {"name": "empty-x"}, "addressType": "IPv4", "endpoints": []}
    assert cells(SLICES, row) == ["empty-x", "IPv4", "<unset>", "<unset>", "<unknown>"]
