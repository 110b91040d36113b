"""The printers' tests read Tables of built-in kinds: their columns registered as the
composition root registers them."""

from __future__ import annotations

import pytest

from proxy.aggregator import printers as apiservice_printers
from proxy.kube.printers import register_builtin_printers
from proxy.printers.handlers import register_printers


@pytest.fixture(autouse=True, scope="package")
def _builtin_printers() -> None:
    register_builtin_printers()
    register_printers("apiregistration.k8s.io", apiservice_printers.HANDLERS)
