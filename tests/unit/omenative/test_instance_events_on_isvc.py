"""Instance events as instance-restart-policy.md documents them (rows F17, F35): RestartTriggered names the
kubelet's reason and exit code, and Instance events go to the InferenceService of a projected replica."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

from ome.api.resources import INFERENCE_REPLICAS
from ome.omenative import instances, revisions
from tests.unit.controllers.inferencereplica.world import World
from tests.unit.omenative.builders import pod, replica


def _ctx() -> instances.Context:
    data = revisions.from_spec(replica(workers=1)["spec"])
    assert data is not None
    return instances.Context(base="chat", component="engine", desired=1, update_revision="chat-engine-abc",
                             update_hash="abc", revisions={"abc": data}, now=datetime(2026, 1, 1, 1, tzinfo=UTC),
                             ready_timeout=1800.0, drain_timeout=600.0, replica="prod/chat-engine")


def test_restart_triggered_names_the_reason_and_exit_code() -> None:
    row = {"index": 0, "incarnation": 1, "phase": "Ready", "runningRevision": "chat-engine-abc",
           "readySince": "2026-01-01T00:00:00Z"}
    leader = pod("chat-engine-0-leader-0", runner="leader")
    worker = dataclasses.replace(pod("chat-engine-0-worker-0", runner="worker"),
                                 restarted_at="2026-01-01T00:30:00Z", restart_reason="OOMKilled", exit_code=137,
                                 container="ome-container")
    plan = instances.plan(_ctx(), [row], [leader, worker])
    [message] = [e[2] for e in plan.events if e[1] == "RestartTriggered"]
    assert message == ("OMENative component=engine instance=0 restart triggered: pod chat-engine-0-worker-0 "
                       "container ome-container restarted after Ready: OOMKilled (exit 137) (incarnation=2)")


class _Targets:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def event(self, obj: dict[str, Any], type_: str, reason: str, message: str) -> None:
        self.events.append((obj["kind"], reason))


async def _events(owned: bool) -> list[tuple[str, str]]:
    world = World(instance_ready_timeout=60.0)
    recorder = _Targets()
    world.reconciler._recorder = recorder  # type: ignore[assignment]  # noqa: SLF001
    body = replica()
    if owned:
        body["metadata"]["ownerReferences"] = [
            {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "name": "chat", "uid": "isvc-uid",
             "controller": True}]
    world.api.put(INFERENCE_REPLICAS, body)
    await world.reconcile()
    world.now = world.now.replace(hour=world.now.hour + 1)
    await world.reconcile()
    return recorder.events


async def test_instance_events_go_to_the_inference_service_and_a_standalone_replica_keeps_them() -> None:
    owned = [e for e in await _events(True) if e[1] == "InstanceFailed"]
    assert owned and {kind for kind, _ in owned} == {"InferenceService"}
    alone = [e for e in await _events(False) if e[1] == "InstanceFailed"]
    assert alone and {kind for kind, _ in alone} == {"InferenceReplica"}
