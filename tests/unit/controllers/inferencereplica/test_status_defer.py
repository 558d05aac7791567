"""A pass that opens serving gates leaves a counts-only status change to the pass its pods' Ready brings."""

from __future__ import annotations

from typing import Any

from ome.api.resources import INFERENCE_REPLICAS
from ome.controllers.inferencereplica.status_defer import GATE_RECHECK, gate_follows
from tests.unit.controllers.inferencereplica.world import World
from tests.unit.omenative.builders import replica as replica_body

OLD: dict[str, Any] = {"replicas": 1, "readyReplicas": 0, "servingReplicas": 0,
                       "instanceStatuses": [{"index": 0, "phase": "Creating"}]}


def test_only_the_pod_counts_moved_while_gates_open_waits() -> None:
    new = {**OLD, "readyReplicas": 1, "updatedReadyReplicas": 1, "availableReplicas": 1,
           "instanceStatuses": [{"index": 0, "phase": "Creating", "podCount": 1, "availablePodCount": 1,
                                 "admitted": True}]}
    assert gate_follows(OLD, new, opened_gates=["p-0"], events=[])


def test_no_gate_opened_an_event_or_another_field_writes() -> None:
    new = {**OLD, "readyReplicas": 1}
    assert not gate_follows(OLD, new, opened_gates=[], events=[])
    assert not gate_follows(OLD, new, opened_gates=["p-0"], events=[("Normal", "RestartCompleted", "m")])
    moved = {**new, "instanceStatuses": [{"index": 0, "phase": "Ready"}]}
    assert not gate_follows(OLD, moved, opened_gates=["p-0"], events=[])
    assert not gate_follows(OLD, {**new, "servingReplicas": 1}, opened_gates=["p-0"], events=[])



async def test_an_instance_start_writes_its_status_twice_not_three_times() -> None:
    world = World()
    world.api.put(INFERENCE_REPLICAS, replica_body())
    await world.reconcile()  # the pod is created, its Instance recorded
    assert len(world.api.writes_of("update_status")) == 1
    world.kubelet()  # containers ready: this pass opens the gate and leaves the counts to the next
    result = await world.reconcile()
    assert world.api.writes_of("patch/status") and len(world.api.writes_of("update_status")) == 1
    assert result.requeue_after is not None and result.requeue_after <= GATE_RECHECK
    world.kubelet()  # the gate folds into Ready: the Instance is Ready, all counts in one write
    await world.reconcile()
    assert len(world.api.writes_of("update_status")) == 2
    status = (world.replica() or {})["status"]
    assert [r["phase"] for r in status["instanceStatuses"]] == ["Ready"]
    assert (status["readyReplicas"], status["servingReplicas"]) == (1, 1)
