"""The InferenceService controller's status write and the rollout run controller's conditions.

Found by the canary e2e: a promote closed the run (`RolloutPlanReady` NoActiveRun, written by the run
controller) while an InferenceService pass that had read the service before that write carried the old
`Pinned` entry into its own apply of the atomic conditions list, and put it back.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ome.api import resources as r
from ome.framework import errors
from ome.framework.reconcile import Request
from tests.unit.controllers.inferenceservice.fakes import FakeRecorder, FakeWorld, make_reconciler
from tests.unit.controllers.inferenceservice.test_reconciler import resolvers  # noqa: F401 - fixture
from tests.unit.resolution import builders

Obj = dict[str, Any]
REQ = Request("demo", "llama")
GROUPS = {"groups": [{"components": ["engine"], "canary": {"steps": [{"capacity": "100%", "traffic": 100}]}}]}


def plan_ready(reason: str) -> Obj:
    return {"type": "RolloutPlanReady", "status": "True", "reason": reason, "lastTransitionTime": "2026-12-05T00:00:00Z"}


def reason_of(isvc: Obj) -> str | None:
    conds = (isvc.get("status") or {}).get("conditions") or []
    return next((c.get("reason") for c in conds if c["type"] == "RolloutPlanReady"), None)


def with_plan(isvc: Obj, reason: str, rv: str) -> Obj:
    """`isvc` as the run controller's write of `reason` left it."""
    out = copy.deepcopy(isvc)
    status = out.setdefault("status", {})
    kept = [c for c in status.get("conditions") or [] if c["type"] != "RolloutPlanReady"]
    status["conditions"] = sorted([*kept, plan_ready(reason)], key=lambda c: c["type"])
    out["metadata"]["resourceVersion"] = rv
    return out


def available(world: FakeWorld, value: str) -> None:
    dep = world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo")
    assert dep is not None
    dep["status"] = {"replicas": 1, "availableReplicas": 1 if value == "True" else 0,
                     "conditions": [{"type": "Available", "status": value}]}


def unavailable(world: FakeWorld) -> None:
    """A change of the engine Deployment, so the next pass has a status to write."""
    available(world, "False")


async def settled(**spec: Any) -> tuple[FakeWorld, Any, Obj]:
    world = FakeWorld()
    world.put(r.INFERENCE_SERVICES, builders.isvc(**spec))
    reconciler = make_reconciler(world, FakeRecorder())
    await reconciler.reconcile(REQ)
    available(world, "True")
    await reconciler.reconcile(REQ)
    current = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert current is not None
    return world, reconciler, current


async def test_a_pass_that_read_the_service_before_the_run_closed_keeps_the_closed_run() -> None:
    world, reconciler, current = await settled(rollout=GROUPS)
    world.read_once(r.INFERENCE_SERVICES, with_plan(current, "Pinned", "400"))  # what the pass reads
    world.put(r.INFERENCE_SERVICES, with_plan(current, "NoActiveRun", "401"))  # the cache at write time
    unavailable(world)
    world.writes.clear()
    await reconciler.reconcile(REQ)
    assert world.writes == [("apply/status", "InferenceService", "llama")]
    assert world.preconditions[-1] == "401"
    written = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert written is not None and reason_of(written) == "NoActiveRun"


async def test_a_run_controller_write_the_cache_does_not_show_yet_is_a_conflict() -> None:
    world, reconciler, current = await settled(rollout=GROUPS)
    world.put(r.INFERENCE_SERVICES, with_plan(current, "Pinned", "400"))
    world.written_elsewhere(r.INFERENCE_SERVICES, with_plan(current, "NoActiveRun", "401"))
    unavailable(world)
    with pytest.raises(errors.Conflict):  # requeued; the next pass reads the cache that shows it
        await reconciler.reconcile(REQ)
    world.deliver()
    await reconciler.reconcile(REQ)
    written = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert written is not None and reason_of(written) == "NoActiveRun"


async def test_a_service_without_rollout_groups_writes_without_a_precondition() -> None:
    """No other writer of its conditions: nothing to guard, and no 409 to pay for at scale."""
    world, reconciler, _ = await settled()
    unavailable(world)
    world.preconditions.clear()
    await reconciler.reconcile(REQ)
    assert world.preconditions == [None]
