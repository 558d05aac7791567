"""A pass that opens serving gates leaves a counts-only status change to the pass its pods' Ready brings."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from ome.api.resources import INFERENCE_REPLICAS
from ome.controllers.inferencereplica.status_defer import (
    GATE_RECHECK,
    START_WINDOW,
    gate_follows,
    start_counts_wait,
)
from tests.unit.controllers.inferencereplica.world import START, World
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


CREATING: dict[str, Any] = {
    "replicas": 1, "readyReplicas": 0,
    "instanceStatuses": [{"index": 0, "phase": "Creating",
                          "operation": {"type": "Create", "step": "CreatePods", "startedAt": "2026-01-01T00:00:00Z"}}],
}


def _counted(status: dict[str, Any], **row: Any) -> dict[str, Any]:
    return {**status, "instanceStatuses": [{**status["instanceStatuses"][0], **row}]}


def test_pod_counts_of_a_starting_instance_wait_out_the_window() -> None:
    new = _counted(CREATING, podCount=1, admitted=True)
    assert start_counts_wait(CREATING, new, now=START + timedelta(seconds=3), events=[]) == pytest.approx(
        START_WINDOW - 3)
    assert start_counts_wait(CREATING, new, now=START + timedelta(seconds=START_WINDOW), events=[]) is None


def test_anything_but_a_starting_instance_s_pod_counts_writes() -> None:
    soon = START + timedelta(seconds=1)
    counted = _counted(CREATING, podCount=1)
    assert start_counts_wait(CREATING, CREATING, now=soon, events=[]) is None  # nothing to write anyway
    assert start_counts_wait(CREATING, counted, now=soon, events=[("Normal", "X", "m")]) is None
    assert start_counts_wait(CREATING, _counted(CREATING, podCount=1, phase="Ready"), now=soon, events=[]) is None
    assert start_counts_wait(CREATING, {**counted, "observedGeneration": 2}, now=soon, events=[]) is None
    restarting = _counted(CREATING, operation={"type": "Restart", "startedAt": "2026-01-01T00:00:00Z"})
    assert start_counts_wait(restarting, _counted(restarting, podCount=1), now=soon, events=[]) is None


async def test_the_pass_a_new_pod_brings_leaves_its_count_to_the_start_or_the_window() -> None:
    world = World()
    world.api.put(INFERENCE_REPLICAS, replica_body())
    await world.reconcile()  # the pod is created, its Instance recorded
    result = await world.reconcile()  # the pod is in the cache, still starting: only its count moved
    assert len(world.api.writes_of("update_status")) == 1
    assert result.requeue_after is not None and result.requeue_after <= START_WINDOW
    world.now += timedelta(seconds=START_WINDOW)  # a pod that does not start is counted after the window
    await world.reconcile()
    assert len(world.api.writes_of("update_status")) == 2
    rows = (world.replica() or {})["status"]["instanceStatuses"]
    assert (rows[0]["phase"], rows[0]["podCount"]) == ("Creating", 1)
