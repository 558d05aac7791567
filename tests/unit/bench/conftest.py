"""The bench scripts under bench/ as modules for the tests (they import each other by bare name, so bench/
is on sys.path while one loads)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"


def bench_module(name: str) -> ModuleType:
    assert (BENCH / f"{name}.py").exists(), f"missing {BENCH / name}.py"
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCH))


@pytest.fixture(scope="module")
def soak() -> ModuleType:
    return bench_module("bench_soak")


@pytest.fixture(scope="module")
def floor() -> ModuleType:
    return bench_module("churn_floor")


@pytest.fixture(scope="module")
def scale() -> ModuleType:
    return bench_module("bench_scale")


@pytest.fixture(scope="module")
def census() -> ModuleType:
    return bench_module("heap_census")
