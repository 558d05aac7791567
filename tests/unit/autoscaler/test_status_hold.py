"""A new component's autoscaler entry is published once (for the InferenceService controller to write),
with the HPA controller's first report on the HPA, instead of once for the class and again for the report;
the hold ends at the grace period."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ome.api import resources as r
from ome.config import inferenceservice_config as cfg
from ome.controllers.autoscaler import decide
from ome.controllers.autoscaler import reconciler as rec
from tests.unit.autoscaler.test_reconciler import REQ, World, _entry, _put_isvc, _workload
from tests.unit.autoscaler.test_reconciler import resolvers as resolvers  # noqa: F401 - the autouse fixture
from tests.unit.controllers.inferenceservice.fakes import FakeRecorder

CREATED = datetime(2026, 1, 1, tzinfo=UTC)  # builders.isvc's creationTimestamp
REPORT = {"currentReplicas": 1, "desiredReplicas": 1, "conditions": [
    {"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale", "message": "ok",
     "lastTransitionTime": "2026-01-01T00:00:20Z"}]}


def _reconciler(world: World, now: datetime) -> rec.AutoscalerReconciler:
    return rec.AutoscalerReconciler(
        reader=world, writer=world, recorder=FakeRecorder(),  # type: ignore[arg-type]
        config=cfg.InferenceServiceConfig(), features=rec.Features(keda_served=False, policy_enabled=False),
        entries=world.entries, clock=lambda: now,
    )


def _status_writes(world: World) -> int:
    """Status writes asked of the InferenceService controller (its key queued with new entries)."""
    return len(world.queued)


def _hpa(world: World) -> dict[str, Any]:
    hpa = world.get_or_none(r.HPAS, "llama-engine", "demo")
    assert hpa is not None
    hpa["metadata"]["creationTimestamp"] = "2026-01-01T00:00:05Z"
    return hpa


async def test_the_first_entry_waits_for_the_hpa_report_and_is_written_once() -> None:
    world = World()
    _put_isvc(world)
    now = CREATED + timedelta(seconds=5)
    result = await _reconciler(world, now).reconcile(REQ)
    assert world.get_or_none(r.HPAS, "llama-engine", "demo") is not None
    assert _status_writes(world) == 0 and result.requeue_after == pytest.approx(decide.SCALER_REPORT_GRACE - 5)
    hpa = _hpa(world)  # the HPA's creation event: no report yet
    result = await _reconciler(world, now + timedelta(seconds=1)).reconcile(REQ)
    assert _status_writes(world) == 0 and result.requeue_after == pytest.approx(decide.SCALER_REPORT_GRACE - 1)
    hpa["status"] = REPORT  # the HPA controller's report
    result = await _reconciler(world, now + timedelta(seconds=15)).reconcile(REQ)
    assert _status_writes(world) == 1 and result.requeue_after is None
    auto = _entry(world)["autoscaler"]
    assert (auto["class"], auto["currentReplicas"], [c["type"] for c in auto["conditions"]]) == (
        "HPA", 1, ["AbleToScale"])
    world.writes.clear()
    await _reconciler(world, now + timedelta(seconds=20)).reconcile(REQ)
    assert world.writes == []


async def test_without_a_report_the_entry_is_written_at_the_end_of_the_grace_period() -> None:
    world = World()
    _put_isvc(world)
    await _reconciler(world, CREATED + timedelta(seconds=5)).reconcile(REQ)
    _hpa(world)
    late = CREATED + timedelta(seconds=5 + decide.SCALER_REPORT_GRACE)
    result = await _reconciler(world, late).reconcile(REQ)
    assert _status_writes(world) == 1 and result.requeue_after is None
    assert _entry(world)["autoscaler"] == {"class": "HPA", "managedBy": "ome", "specSource": "default"}


async def test_a_component_that_has_an_entry_is_reported_at_once() -> None:
    world = World()
    isvc = _put_isvc(world)
    isvc["status"] = {"components": {"engine": {"autoscaler": {"class": "None", "managedBy": "ome",
                                                                "specSource": "default"}}}}
    await _reconciler(world, CREATED + timedelta(seconds=5)).reconcile(REQ)
    assert _status_writes(world) == 1
    assert _entry(world)["autoscaler"]["class"] == "HPA"


async def test_an_hpa_that_has_not_counted_the_replica_yet_is_waited_for() -> None:
    world = World()
    _put_isvc(world, deploymentMode="OMENative")
    _workload(world, r.INFERENCE_REPLICAS, 1)  # created with its count by the InferenceService controller
    now = CREATED + timedelta(seconds=5)
    await _reconciler(world, now).reconcile(REQ)
    hpa = _hpa(world)
    hpa["status"] = {**REPORT, "currentReplicas": 0}  # synced before the replica recorded its Instance
    result = await _reconciler(world, now + timedelta(seconds=10)).reconcile(REQ)
    assert _status_writes(world) == 0 and result.requeue_after is not None
    hpa["status"] = REPORT  # the next sync counts it
    await _reconciler(world, now + timedelta(seconds=25)).reconcile(REQ)
    assert _status_writes(world) == 1
    assert _entry(world)["autoscaler"]["currentReplicas"] == 1
