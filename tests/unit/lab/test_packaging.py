"""``pip install`` stays quiet: pyproject.toml as current setuptools reads it, without
deprecation warnings (the license as an SPDX expression, PEP 639)."""

from __future__ import annotations

import warnings
from pathlib import Path

from setuptools.config.pyprojecttoml import apply_configuration
from setuptools.dist import Distribution

PYPROJECT = Path(__file__).resolve().parents[3] / "pyproject.toml"


def test_pyproject_applies_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dist = apply_configuration(Distribution(), PYPROJECT)
    assert dist.metadata.license_expression == "Apache-2.0"
