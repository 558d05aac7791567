"""The reconciler passes lifecycle.stuckPodGracePeriod to the planner: a new Instance whose image can't be
pulled fails once its pod is older than the grace, not at the 30m deadline (instances.md §When an
Instance fails)."""

from __future__ import annotations

from datetime import timedelta

from ome.api.resources import INFERENCE_REPLICAS
from ome.omenative.pods_view import format_time
from tests.unit.controllers.inferencereplica.world import START, World
from tests.unit.omenative.builders import replica


async def test_a_bad_image_fails_the_new_instance_after_the_stuck_pod_grace() -> None:
    world = World(instance_ready_timeout=1800.0, stuck_pod_grace_period=60.0)
    world.api.put(INFERENCE_REPLICAS, replica())
    await world.reconcile()  # creates the Instance's pod
    [pod] = world.pods().values()
    pod["metadata"]["creationTimestamp"] = format_time(START)
    pod["status"] = {"phase": "Pending", "containerStatuses": [
        {"name": "ome-container", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}

    world.now = START + timedelta(seconds=30)
    result = await world.reconcile()
    assert result.requeue_after is not None and result.requeue_after <= 30  # woken at the grace's end
    world.now = START + timedelta(seconds=61)
    await world.reconcile()

    [status] = (world.replica() or {})["status"]["instanceStatuses"]
    assert status["phase"] == "Failed" and status["lastFailure"]["reason"] == "ImagePullBackOff"
    assert [e for e in world.recorder.events if e[1] == "InstanceFailed"][0][2].endswith("): ImagePullBackOff")


async def test_a_pod_waiting_for_room_holds_the_new_instance_past_its_deadline() -> None:
    """Without unschedulableGracePeriod a new Instance waits for room: its operation shows `Unschedulable`
    and the 30m deadline does not fail it (instances.md: "Without unschedulableGracePeriod, an Instance
    waits")."""
    world = World(instance_ready_timeout=1800.0)
    world.api.put(INFERENCE_REPLICAS, replica())
    await world.reconcile()
    [pod] = world.pods().values()
    pod["status"] = {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": "0/3 nodes are available", "lastTransitionTime": format_time(START)}]}
    world.now = START + timedelta(seconds=5)
    await world.reconcile()
    world.now = START + timedelta(minutes=31)
    await world.reconcile()

    [status] = (world.replica() or {})["status"]["instanceStatuses"]
    assert status["phase"] == "Creating" and status["operation"]["waiting"] == "Unschedulable"
    assert [e for e in world.recorder.events if e[1] == "InstanceFailed"] == []
