"""The InstanceFailed warning as troubleshoot-an-inferenceservice.md §Instances fail documents it (row F33):
"When OME moves an Instance to the `Failed` phase, it records an `InstanceFailed` Warning event on the
InferenceService ... The message names the Instance and its pod, and ends with one of these causes" (a
kubelet reason, `Unschedulable:` or `DeadlineExceeded:`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ome.api.resources import INFERENCE_REPLICAS
from ome.omenative import instances, revisions
from tests.unit.controllers.inferencereplica.world import World
from tests.unit.omenative.builders import pod, replica


def _ctx() -> instances.Context:
    data = revisions.from_spec(replica()["spec"])
    assert data is not None
    return instances.Context(base="chat", component="engine", desired=1, update_revision="chat-engine-abc",
                             update_hash="abc", revisions={"abc": data}, now=datetime(2026, 1, 1, 1, tzinfo=UTC),
                             ready_timeout=1800.0, drain_timeout=600.0, replica="prod/chat-engine")


def test_deadline_failure_names_instance_and_pod_and_ends_with_deadline_exceeded() -> None:
    row = {"index": 0, "incarnation": 1, "phase": "Creating", "runningRevision": "chat-engine-abc",
           "operation": {"type": "Create", "step": "WaitReady", "deadline": "2026-01-01T00:05:00Z"}}
    plan = instances.plan(_ctx(), [row],
                          [pod("chat-engine-0-default-0", containers_ready=False, gate=None, ready=False)])
    [(kind, reason, message)] = [e for e in plan.events if e[1] == "InstanceFailed"]
    assert (kind, reason) == ("Warning", "InstanceFailed")
    assert message.startswith('InferenceReplica prod/chat-engine component=engine instance=0 escalated to '
                              'Phase=Failed (pod="chat-engine-0-default-0"): DeadlineExceeded: Create/WaitReady')


class _Targets:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    def event(self, obj: dict[str, Any], type_: str, reason: str, message: str) -> None:
        self.events.append((obj["kind"], type_, reason, message))


async def test_instance_failed_is_recorded_on_the_inference_service() -> None:
    world = World(instance_ready_timeout=60.0)
    recorder = _Targets()
    world.reconciler._recorder = recorder  # type: ignore[assignment]  # noqa: SLF001
    body = replica()
    body["metadata"]["ownerReferences"] = [
        {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "name": "chat", "uid": "isvc-uid",
         "controller": True}]
    world.api.put(INFERENCE_REPLICAS, body)
    await world.reconcile()  # creates the Instance's pod; it never becomes ready
    world.now = world.now.replace(hour=world.now.hour + 1)
    await world.reconcile()
    failed = [e for e in recorder.events if e[2] == "InstanceFailed"]
    assert failed, recorder.events
    assert failed[0][0] == "InferenceService" and "escalated to Phase=Failed" in failed[0][3]
