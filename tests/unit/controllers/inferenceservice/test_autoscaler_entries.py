"""The InferenceService reconciler is the one writer of the InferenceService status: the autoscaler's
entries (`status.components.<c>.autoscaler`) reach the status through it, in the same write as its own
fields (autoscaler/entries.py). Both reconcilers run here over one in-memory world."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ome.api import resources as r
from ome.config import inferenceservice_config as cfg
from ome.controllers.autoscaler import entries as scaler_entries
from ome.controllers.autoscaler import reconciler as autoscaler
from ome.controllers.autoscaler.entries import AutoscalerEntries
from ome.framework.reconcile import Request
from ome.framework.resources import Resource
from tests.unit.controllers.inferenceservice.fakes import FakeRecorder, FakeWorld, make_reconciler
from tests.unit.resolution import builders

Obj = dict[str, Any]
pytestmark = pytest.mark.usefixtures("fixed_resolution")
REQ = Request("demo", "llama")
NOW = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=10)  # 10 s after builders.isvc's creation
AVAILABLE = {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}
REPORT = {"currentReplicas": 1, "desiredReplicas": 1, "conditions": [
    {"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale", "message": "ok",
     "lastTransitionTime": "2026-01-01T00:00:08Z"}]}


class Manager:
    """One manager's two controllers over `world`: the InferenceService and autoscaler reconcilers sharing
    one `AutoscalerEntries`, and the InferenceService keys the autoscaler queued."""

    def __init__(self, world: FakeWorld, *, writer: Any = None, policy: bool = False) -> None:
        self.entries = AutoscalerEntries()
        self.queued: list[Request] = []
        self.entries.subscribe(self.queued.append)
        self.isvc = make_reconciler(world, FakeRecorder(), writer=writer, now=NOW, autoscaler_entries=self.entries)
        self.autoscaler = autoscaler.AutoscalerReconciler(
            reader=world, writer=world, recorder=FakeRecorder(),  # type: ignore[arg-type]
            config=cfg.InferenceServiceConfig(),
            features=autoscaler.Features(keda_served=False, policy_enabled=policy),
            entries=self.entries, clock=lambda: NOW)


def _status_writes(world: FakeWorld) -> int:
    return sum(1 for verb, kind, _ in world.writes if verb == "apply/status" and kind == "InferenceService")


def _status(world: FakeWorld) -> Obj:
    obj = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert obj is not None
    return dict(obj.get("status") or {})


def _auto(world: FakeWorld, component: str = "engine") -> Obj | None:
    entry: Obj | None = ((_status(world).get("components") or {}).get(component) or {}).get("autoscaler")
    return entry


def _ready(world: FakeWorld, *names: str) -> None:
    """The Deployments are Available and their HPAs reported on them (the HPA controller's first sync)."""
    for name in names:
        dep = world.get_or_none(r.DEPLOYMENTS, name, "demo")
        hpa = world.get_or_none(r.HPAS, name, "demo")
        assert dep is not None and hpa is not None
        dep["status"] = {"conditions": [AVAILABLE]}
        hpa["metadata"]["creationTimestamp"] = "2026-01-01T00:00:05Z"
        hpa["status"] = {**REPORT, "currentReplicas": dep["spec"].get("replicas", 1)}


async def _serving(world: FakeWorld, manager: Manager, **spec: Any) -> None:
    """A new service started and reported: its workloads and HPAs come up, then both reconcilers run."""
    world.put(r.INFERENCE_SERVICES, builders.isvc(**spec))
    await manager.isvc.reconcile(REQ)
    await manager.autoscaler.reconcile(REQ)
    _ready(world, *(f"llama-{c}" for c in ("engine", "router") if c == "engine" or c in spec))
    await manager.autoscaler.reconcile(REQ)
    await manager.isvc.reconcile(REQ)


async def test_a_new_services_first_status_carries_the_autoscaler_entry_in_one_write() -> None:
    world = FakeWorld()
    manager = Manager(world)
    world.put(r.INFERENCE_SERVICES, builders.isvc())
    await manager.isvc.reconcile(REQ)  # the Deployment; the first status is held until Ready
    held = await manager.autoscaler.reconcile(REQ)  # the HPA; its entry waits for the HPA's report
    assert held.requeue_after is not None and manager.queued == [] and _status_writes(world) == 0
    _ready(world, "llama-engine")
    await manager.autoscaler.reconcile(REQ)  # the report: published, and the service queued
    assert manager.queued == [REQ] and _status_writes(world) == 0
    await manager.isvc.reconcile(REQ)
    assert _status_writes(world) == 1  # one write: the service's status and the autoscaler's entry
    engine = _status(world)["components"]["engine"]
    assert engine["scaleTargetRef"]["kind"] == "Deployment"
    assert (engine["autoscaler"]["class"], engine["autoscaler"]["currentReplicas"]) == ("HPA", 1)
    assert next(c for c in _status(world)["conditions"] if c["type"] == "Ready")["status"] == "True"
    world.writes.clear()
    await manager.autoscaler.reconcile(REQ)
    await manager.isvc.reconcile(REQ)
    assert world.writes == [] and manager.queued == [REQ]  # the status shows the entry: nothing queued


async def test_a_new_leader_with_nothing_published_keeps_the_entry_the_status_has() -> None:
    world = FakeWorld()
    await _serving(world, Manager(world))
    entry = _auto(world)
    assert entry is not None and entry["class"] == "HPA"
    world.writes.clear()
    leader = Manager(world)  # a restart: nothing published in this process yet
    await leader.isvc.reconcile(REQ)
    assert world.writes == [] and _auto(world) == entry
    dep = world.get_or_none(r.DEPLOYMENTS, "llama-engine", "demo")
    assert dep is not None
    dep["status"] = {"conditions": [{**AVAILABLE, "status": "False", "reason": "MinimumReplicasUnavailable"}]}
    await leader.isvc.reconcile(REQ)  # a write of its own fields carries the entry over
    assert _status_writes(world) == 1 and _auto(world) == entry
    world.writes.clear()
    await leader.autoscaler.reconcile(REQ)  # its first pass finds the same entry: nothing to queue
    assert leader.queued == [] and world.writes == []


async def test_an_entry_change_is_one_status_write() -> None:
    world = FakeWorld()
    manager = Manager(world)
    await _serving(world, manager)
    world.writes.clear()
    hpa = world.get_or_none(r.HPAS, "llama-engine", "demo")
    assert hpa is not None
    hpa["status"] = {**REPORT, "currentReplicas": 2, "desiredReplicas": 3}  # the HPA controller's next sync
    queued = len(manager.queued)
    await manager.autoscaler.reconcile(REQ)
    assert len(manager.queued) == queued + 1 and world.writes == []  # the autoscaler writes no status
    await manager.isvc.reconcile(REQ)
    await manager.isvc.reconcile(REQ)
    assert world.writes == [("apply/status", "InferenceService", "llama")]
    entry = _auto(world)
    assert entry is not None and (entry["currentReplicas"], entry["desiredReplicas"]) == (2, 3)


async def test_a_change_back_while_the_cache_is_stale_is_still_queued() -> None:
    """The cache still shows the status before the InferenceService reconciler's last write: entries that
    equal it but not what was published last must still reach the status."""
    world = FakeWorld()
    manager = Manager(world)
    await _serving(world, manager)
    isvc = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    hpa = world.get_or_none(r.HPAS, "llama-engine", "demo")
    assert isvc is not None and hpa is not None
    hpa["status"] = {**REPORT, "currentReplicas": 2}
    await manager.autoscaler.reconcile(REQ)
    world.unshown.add(r.INFERENCE_SERVICES.name)  # the watch does not deliver the next status write yet
    world.writes.clear()
    await manager.isvc.reconcile(REQ)
    assert _status_writes(world) == 1
    hpa["status"] = REPORT  # back to what the stale copy shows
    queued = len(manager.queued)
    await manager.autoscaler.reconcile(REQ)
    assert len(manager.queued) == queued + 1
    world.writes.clear()
    await manager.isvc.reconcile(REQ)
    world.deliver()
    assert _status_writes(world) == 1 and (_auto(world) or {}).get("currentReplicas") == 1


async def test_a_removed_components_entry_goes() -> None:
    world = FakeWorld()
    manager = Manager(world)
    await _serving(world, manager, router={})
    assert _auto(world, "router") is not None and _auto(world, "engine") is not None
    isvc = world.get_or_none(r.INFERENCE_SERVICES, "llama", "demo")
    assert isvc is not None
    del isvc["spec"]["router"]
    isvc["metadata"]["generation"] = 2
    await manager.autoscaler.reconcile(REQ)  # deletes the router's HPA and reports the engine alone
    assert world.get_or_none(r.HPAS, "llama-router", "demo") is None
    world.writes.clear()
    await manager.isvc.reconcile(REQ)
    assert _status_writes(world) == 1
    assert "router" not in _status(world)["components"] and _auto(world, "engine") is not None


async def test_an_autoscaler_that_cannot_be_resolved_is_reported_with_the_first_status_at_once() -> None:
    world = FakeWorld()
    manager = Manager(world)  # AutoscalerPolicy off: a policy reference cannot be resolved
    world.put(r.INFERENCE_SERVICES, builders.isvc(engine={"autoscalerPolicyRef": {"name": "queue-depth"}}))
    await manager.isvc.reconcile(REQ)
    assert _status_writes(world) == 0  # starting normally: held
    await manager.autoscaler.reconcile(REQ)
    await manager.isvc.reconcile(REQ)
    assert _status_writes(world) == 1  # not Ready yet, but the autoscaler's problem is reported now
    resolved = next(c for c in (_auto(world) or {})["conditions"] if c["type"] == "AutoscalerResolved")
    assert (resolved["status"], resolved["reason"]) == ("False", "PolicyNotFound")


class LegacyOwned(FakeWorld):
    """Status applies answered as the apiserver would for an object whose autoscaler entries were applied
    by the autoscaler's own field manager before the merge, until that manager released them."""

    def __init__(self) -> None:
        super().__init__()
        self.legacy = True
        self.managers: list[tuple[str, str | None]] = []

    async def apply(self, res: Resource, obj: Obj, *, field_manager: str, force: bool = True,
                    subresource: str | None = None) -> Obj:
        if subresource == "status" and field_manager == scaler_entries.LEGACY_FIELD_MANAGER:
            assert "status" not in obj  # an empty apply: it drops every field that manager alone owned
            self.writes.append(("release/status", res.kind, obj["metadata"]["name"]))
            self.legacy = False
            current = self.get_or_none(res, obj["metadata"]["name"], obj["metadata"]["namespace"])
            assert current is not None
            return current
        answer = await super().apply(res, obj, field_manager=field_manager, force=force, subresource=subresource)
        if subresource == "status":
            assert force, "the fields the autoscaler's old manager owns are taken over, not a 409"
            managers = [{"manager": field_manager, "operation": "Apply", "subresource": "status"}]
            if self.legacy:
                managers.append({"manager": scaler_entries.LEGACY_FIELD_MANAGER, "operation": "Apply",
                                 "subresource": "status"})
            answer = {**answer, "metadata": {**answer["metadata"], "managedFields": managers}}
        return answer


async def test_an_object_from_before_the_merge_has_the_old_managers_fields_released_once() -> None:
    world = LegacyOwned()
    manager = Manager(world, writer=world)
    await _serving(world, manager)
    assert [verb for verb, kind, _ in world.writes if kind == "InferenceService"] == [
        "apply/status", "release/status"]
    hpa = world.get_or_none(r.HPAS, "llama-engine", "demo")
    assert hpa is not None
    hpa["status"] = {**REPORT, "currentReplicas": 2}
    world.writes.clear()
    await manager.autoscaler.reconcile(REQ)
    await manager.isvc.reconcile(REQ)
    assert world.writes == [("apply/status", "InferenceService", "llama")]  # released: no more
