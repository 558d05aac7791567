"""Parity with the Go OME manager: the Go tests' cases as data (cases/*.yaml), run through our renderers.

Each case names the Go test it comes from (sgl-project/ome v0.1.5), the inputs, and the fields the Go
test expects on the rendered Deployment, Service, HPA, PDB and friends. `items` tags the cases that show
the six parity fixes of issue 21; every fix has at least one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.parity import harness

CASES_DIR = Path(__file__).parent / "cases"
CASES = sorted(CASES_DIR.glob("*.yaml"))
PARITY_ITEMS = {1, 2, 3, 4, 5, 6}
"""1 readiness probe, 2 router identity, 3 labels/annotations, 4 pod-only annotations off Services,
5 targetUtilizationPercentage / load-balancer-ip, 6 imagePullPolicy."""


def _load(path: Path) -> dict[str, Any]:
    case = yaml.safe_load(path.read_text())
    assert isinstance(case, dict), path
    return case


def test_the_suite_has_the_cases_and_covers_every_fix() -> None:
    assert len(CASES) >= 15
    covered = {item for path in CASES for item in _load(path).get("items") or []}
    assert covered >= PARITY_ITEMS, f"fixes without a case: {sorted(PARITY_ITEMS - covered)}"


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case(path: Path) -> None:
    case = _load(path)
    assert case.get("go_test"), "a case names the Go test it comes from"
    for difference in case.get("v13_differences") or []:
        assert difference.get("doc"), f"a v1.3 difference names its doc page: {difference}"
    rendered = harness.render(case)
    expect = case["expect"]
    if "runtime" in expect:
        assert rendered.runtime_name == expect["runtime"]
    for want in expect.get("objects") or []:
        obj = rendered.find(want["kind"], want["name"])
        assert obj is not None, f"{want['kind']} {want['name']} not rendered"
        for check in want.get("fields") or []:
            _check(obj, want, check)
    for gone in expect.get("absent_objects") or []:
        assert rendered.find(gone["kind"], gone["name"]) is None, f"{gone['kind']} {gone['name']} rendered"
    if "kinds" in expect:
        assert sorted(o["kind"] for o in rendered.objects) == sorted(expect["kinds"])


def _check(obj: dict[str, Any], want: dict[str, Any], check: dict[str, Any]) -> None:
    where = f"{want['kind']} {want['name']} {check['path']}"
    actual = harness.lookup(obj, check["path"])
    if check.get("absent"):
        assert harness.is_missing(actual), f"{where}: expected absent, got {actual!r}"
        return
    assert not harness.is_missing(actual), f"{where}: missing"
    if "equals" in check:
        assert actual == check["equals"], f"{where}: {actual!r} != {check['equals']!r}"
    if "includes" in check:
        assert harness.includes(actual, check["includes"]), f"{where}: {actual!r} lacks {check['includes']!r}"
