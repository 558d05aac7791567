"""Fixtures of the InferenceService reconciler tests (the in-memory world and recorder are in fakes.py)."""

from __future__ import annotations

import pytest

from tests.unit.controllers.inferenceservice.fakes import fix_resolution


@pytest.fixture
def fixed_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    """fakes.fix_resolution for a test module: `pytestmark = pytest.mark.usefixtures("fixed_resolution")`."""
    fix_resolution(monkeypatch)
