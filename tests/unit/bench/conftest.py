"""The bench scripts under bench/ as modules for the tests (they import each other by bare name, so bench/
is on sys.path while one loads)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"


def bench_module(name: str) -> ModuleType:
    assert (BENCH / f"{name}.py").exists(), f"missing {BENCH / name}.py"
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCH))


def _module_fixture(name: str) -> Any:
    """A module-scoped fixture returning the bench script `name`."""

    @pytest.fixture(scope="module")
    def load() -> ModuleType:
        return bench_module(name)

    return load


soak = _module_fixture("bench_soak")
floor = _module_fixture("churn_floor")
scale = _module_fixture("bench_scale")
census = _module_fixture("heap_census")
phases = _module_fixture("scale_phases")
pprof = _module_fixture("apiserver_pprof")
