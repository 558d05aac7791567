"""Deleting an InferenceReplica drains its Instances before their pods go, behind a finalizer."""

from __future__ import annotations

from datetime import timedelta

from ome.api.resources import INFERENCE_REPLICAS
from ome.framework.reconcile import Result
from ome.omenative import teardown
from ome.omenative.pods_view import format_time
from tests.unit.controllers.inferencereplica.world import START, World
from tests.unit.omenative.builders import replica as replica_body


async def test_live_replica_gets_the_finalizer_once() -> None:
    world = World()
    world.api.put(INFERENCE_REPLICAS, replica_body())
    await world.reconcile()
    assert teardown.FINALIZER in (world.replica() or {})["metadata"]["finalizers"]
    assert world.api.writes_of("patch") == [("patch", "InferenceReplica", "chat-engine")]
    await world.settle()
    before = len(world.api.writes)
    await world.reconcile()
    assert len(world.api.writes) == before  # settled: no finalizer or any other write


async def test_delete_drains_then_deletes_pods_then_releases_the_finalizer() -> None:
    world = World()
    await world.serving()
    await world.delete_replica()

    await world.reconcile()  # the gate closes first; the pod stays while Ready still says True
    assert world.api.writes_of("patch/status") == [("patch/status", "Pod", "chat-engine-0-default-0")]
    assert world.api.writes_of("delete") == []
    assert (world.replica() or {})["status"]["instanceStatuses"][0]["phase"] == "Deleting"
    assert teardown.FINALIZER in (world.replica() or {})["metadata"]["finalizers"]

    await world.reconcile()  # the status catches up with the closed gate (servingPodCount)
    world.api.writes.clear()
    await world.reconcile()  # idempotent while the drain propagates
    assert world.api.writes == []

    world.kubelet()  # Ready follows the gate: out of rotation
    await world.reconcile()
    assert world.api.writes_of("delete") == [("delete", "Pod", "chat-engine-0-default-0")]
    assert world.replica() is not None

    await world.reconcile()  # no pod left, on the cache and on a live read
    assert world.replica() is None and world.client.lists == 1


async def test_a_lagging_cache_does_not_release_the_finalizer() -> None:
    world = World()
    await world.serving()
    await world.delete_replica()
    pod_key = ("pods", "ns", "chat-engine-0-default-0")
    world.api.hidden.add(pod_key)  # the cache says gone; the apiserver still has it
    result = await world.reconcile()
    assert world.replica() is not None and result.requeue_after
    world.api.hidden.clear()
    del world.api.objects[pod_key]
    await world.reconcile()
    assert world.replica() is None


async def test_teardown_deadline_releases_the_finalizer_with_pods_left() -> None:
    world = World(teardown_deadline=1800.0)
    await world.serving()
    await world.delete_replica()
    (world.replica() or {})["metadata"]["deletionTimestamp"] = format_time(START)
    world.now = START + timedelta(minutes=31)
    await world.reconcile()
    assert world.replica() is None
    assert world.api.writes_of("delete") == []  # the garbage collector takes the pods
    (type_, reason, message), *_ = world.recorder.events
    assert (type_, reason) == ("Warning", "TeardownDeadlineExceeded")
    assert message.startswith("teardown deadline 30m0s exceeded (1 owned pod(s) observed; ")
    assert 'selector: parent="chat", component="engine"' in message
    assert "kubectl patch inferencereplica chat-engine -n ns --type=merge" in message


async def test_without_a_deadline_the_hold_is_reported() -> None:
    world = World(teardown_deadline=None)
    await world.serving()
    await world.delete_replica()
    result = await world.reconcile()
    assert world.replica() is not None and result.requeue_after
    reasons = [r for _, r, _ in world.recorder.events]
    assert "TeardownBlocked" in reasons


async def test_a_deleted_replica_without_the_finalizer_is_left_to_the_garbage_collector() -> None:
    world = World()
    body = replica_body()
    body["metadata"].update(deletionTimestamp=format_time(START), finalizers=["other.io/keep"])
    world.api.put(INFERENCE_REPLICAS, body)
    assert await world.reconcile() == Result()
    assert world.api.writes == []


async def test_a_scale_down_past_its_deadline_warns_once() -> None:
    world = World(instance_ready_timeout=60.0)
    await world.serving(replicas=2)
    body = world.replica() or {}
    body["spec"]["replicas"] = 1
    await world.reconcile()  # Instance 1 starts its drain; the kubelet never follows (stuck)
    world.now = START + timedelta(minutes=5)
    await world.reconcile()
    await world.reconcile()
    overdue = [m for _, r, m in world.recorder.events if r == "DrainOverdue"]
    assert len(overdue) == 1
    assert overdue[0].startswith("OMENative component=engine instance=1: drain overdue by ")
    assert overdue[0].endswith("1 pod(s) still Terminating (chat-engine-1-default-0)")
    conditions = {c["type"]: c for c in (world.replica() or {})["status"]["conditions"]}
    assert conditions["DrainOverdue"]["reason"] == "DrainsOverdue"
