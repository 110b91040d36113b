"""kubectl's columns of the built-in kinds, registered as the composition root registers
them."""

from __future__ import annotations

import pytest

from tests.unit.proxy.printers.support import register_all_printers


@pytest.fixture(autouse=True, scope="package")
def _builtin_printers() -> None:
    register_all_printers()
