"""The first status of a new service is held back while it starts normally, and written once it is
Ready, something fails, or the grace period ends; a service that has a status reports at once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ome.api import resources as r
from ome.controllers.inferenceservice import status, watch_filters
from ome.framework.reconcile import Request
from tests.unit.controllers.inferenceservice.fakes import FakeRecorder, FakeWorld, make_reconciler
from tests.unit.resolution import builders

Obj = dict[str, Any]
pytestmark = pytest.mark.usefixtures("fixed_resolution")
REQ = Request("demo", "llama")
CREATED = datetime(2026, 1, 1, tzinfo=UTC)  # builders.isvc's creationTimestamp


def _status_writes(world: FakeWorld) -> int:
    return sum(1 for verb, kind, _ in world.writes if verb == "apply/status" and kind == "InferenceService")


def _deployment_conditions(world: FakeWorld, *conditions: Obj) -> None:
    dep = world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo")
    assert dep is not None
    dep["status"] = {"conditions": list(conditions)}


def _isvc_status(world: FakeWorld) -> Obj:
    obj = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert obj is not None
    return dict(obj.get("status") or {})


def _cond(obj_status: Obj, type_: str) -> Obj:
    return next(c for c in obj_status["conditions"] if c["type"] == type_)


AVAILABLE = {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}
PROGRESSING = {"type": "Progressing", "status": "True", "reason": "NewReplicaSetCreated"}


async def test_a_new_service_reports_once_when_ready() -> None:
    world = FakeWorld()
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    reconciler = make_reconciler(world, FakeRecorder(), now=CREATED + timedelta(seconds=10))
    result = await reconciler.reconcile(REQ)
    # The children are written, the Initializing status is held, and a requeue ends the hold in time.
    assert world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo") is not None
    assert _status_writes(world) == 0 and _isvc_status(world) == {}
    assert result.requeue_after == pytest.approx(status.FIRST_STATUS_GRACE - 10)
    _deployment_conditions(world, PROGRESSING)
    await reconciler.reconcile(REQ)
    assert _status_writes(world) == 0
    _deployment_conditions(world, PROGRESSING, AVAILABLE)
    result = await reconciler.reconcile(REQ)
    assert _status_writes(world) == 1 and result.requeue_after is None
    written = _isvc_status(world)
    assert written["observedGeneration"] == 1
    assert (_cond(written, "Ready")["status"], _cond(written, "EngineReady")["status"]) == ("True", "True")
    assert written["modelStatus"]["transitionStatus"] == "UpToDate"


async def test_a_deployment_past_its_progress_deadline_is_reported_at_once() -> None:
    world = FakeWorld()
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    reconciler = make_reconciler(world, FakeRecorder(), now=CREATED + timedelta(seconds=10))
    await reconciler.reconcile(REQ)
    _deployment_conditions(world, {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"})
    result = await reconciler.reconcile(REQ)
    assert _status_writes(world) == 1 and result.requeue_after is None
    assert _cond(_isvc_status(world), "EngineReady")["reason"] == "Initializing"


async def test_a_failing_main_container_is_reported_at_once() -> None:
    world = FakeWorld()
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    world.put(r.PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "llama-engine-0", "namespace": "demo", "creationTimestamp": "2026-01-01T00:00:05Z",
        "labels": {"ome.io/inferenceservice": "llama", "component": "engine"}},
        "status": {"containerStatuses": [{"name": "ome-container", "state": {
            "terminated": {"exitCode": 3, "reason": "Error", "message": "no weights"}}}]}})
    reconciler = make_reconciler(world, FakeRecorder(), now=CREATED + timedelta(seconds=10))
    await reconciler.reconcile(REQ)
    assert _status_writes(world) == 1
    assert _isvc_status(world)["modelStatus"]["transitionStatus"] == "BlockedByFailedLoad"


async def test_the_grace_period_ends_the_hold() -> None:
    world = FakeWorld()
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    await make_reconciler(world, FakeRecorder(), now=CREATED + timedelta(seconds=10)).reconcile(REQ)
    late = CREATED + timedelta(seconds=status.FIRST_STATUS_GRACE)
    result = await make_reconciler(world, FakeRecorder(), now=late).reconcile(REQ)
    assert _status_writes(world) == 1 and result.requeue_after is None
    written = _isvc_status(world)
    assert (_cond(written, "Ready")["status"], _cond(written, "EngineReady")["reason"]) == ("False", "Initializing")


async def test_a_service_that_has_a_status_reports_a_change_at_once() -> None:
    world = FakeWorld()
    isvc = builders.isvc()
    isvc["status"] = {"observedGeneration": 1, "conditions": [
        {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:05Z"}]}
    isvc["metadata"]["generation"] = 2
    world.put(r.INFERENCE_SERVICES, isvc)
    await make_reconciler(world, FakeRecorder(), now=CREATED + timedelta(seconds=10)).reconcile(REQ)
    assert _status_writes(world) == 1
    assert _isvc_status(world)["observedGeneration"] == 2


def test_a_deployment_event_that_ends_the_hold_reaches_the_controller() -> None:
    def dep(*conditions: Obj) -> Obj:
        return {"metadata": {"generation": 1}, "status": {"conditions": list(conditions)}}

    stalled = {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}
    assert watch_filters.deployment_changed("MODIFIED", dep(PROGRESSING), dep())
    assert watch_filters.deployment_changed("MODIFIED", dep(stalled), dep(PROGRESSING))
    # A reason or message change of a condition that stays True is not one.
    moved = {**PROGRESSING, "reason": "ReplicaSetUpdated", "message": "progressing"}
    assert not watch_filters.deployment_changed("MODIFIED", dep(moved), dep(PROGRESSING))


def _replica_status(world: FakeWorld, **counts: Any) -> None:
    replica = world.get_or_none(r.INFERENCE_REPLICAS, "llama-engine", "demo")
    assert replica is not None
    replica["status"] = dict(counts)


async def test_an_omenative_service_reports_once_its_ready_instances_serve() -> None:
    world = FakeWorld()
    world.put(r.INFERENCE_SERVICES, builders.isvc(deploymentMode="OMENative"))
    reconciler = make_reconciler(world, FakeRecorder(), now=CREATED + timedelta(seconds=10))
    await reconciler.reconcile(REQ)
    assert world.get_or_none(r.INFERENCE_REPLICAS, "llama-engine", "demo") is not None
    for step in ({"replicas": 1}, {"replicas": 1, "readyReplicas": 1}):  # created; ready, gate just opened
        _replica_status(world, **step)
        assert (await reconciler.reconcile(REQ)).requeue_after is not None
        assert _status_writes(world) == 0
    _replica_status(world, replicas=1, readyReplicas=1, servingReplicas=1, availableReplicas=1)
    assert (await reconciler.reconcile(REQ)).requeue_after is None
    assert _status_writes(world) == 1
    written = _isvc_status(world)
    assert (_cond(written, "Ready")["status"], _cond(written, "EngineReady")["reason"]) == ("True", "Ready")
    assert written["components"]["engine"]["lifecycle"]["servingReplicas"] == 1


async def test_a_failed_instance_is_reported_at_once() -> None:
    world = FakeWorld()
    world.put(r.INFERENCE_SERVICES, builders.isvc(deploymentMode="OMENative"))
    reconciler = make_reconciler(world, FakeRecorder(), now=CREATED + timedelta(seconds=10))
    await reconciler.reconcile(REQ)
    _replica_status(world, replicas=1, conditions=[
        {"type": "Ready", "status": "False", "reason": "InstanceFailed",
         "message": "At least one Instance has Phase=Failed"}])
    await reconciler.reconcile(REQ)
    assert _status_writes(world) == 1
    assert _cond(_isvc_status(world), "EngineReady")["reason"] == "InsufficientAvailable"
