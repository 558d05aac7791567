"""Pod writes and the real expectations: a failed create never strands a replica, and one that waits
is requeued and leaves a log line."""

from __future__ import annotations

import copy
from datetime import timedelta

import pytest
from structlog.testing import capture_logs

from ome.api.resources import INFERENCE_REPLICAS, PODS, SERVICES
from ome.framework import errors
from ome.framework.expectations import EXPECTATIONS_TIMEOUT
from ome.omenative import instance_names as names
from tests.unit.controllers.inferencereplica.world import START, World
from tests.unit.omenative.builders import replica as replica_body

KEY = ("ns", "chat-engine")
LEADER, WORKER_0, WORKER_1 = "chat-engine-0-leader-0", "chat-engine-0-worker-0", "chat-engine-0-worker-1"


def denied() -> errors.Forbidden:
    """An admission webhook's refusal: an error the work queue backs off on (a ResourceQuota's refusal
    is a hold instead: test_create_holds.py)."""
    return errors.Forbidden(403, "Forbidden", 'admission webhook "policy.example.com" denied the request')


async def gang_world() -> World:
    """A leader + 2 workers Instance whose finalizer and revision exist: the next pass creates pods."""
    world = World()
    world.api.put(INFERENCE_REPLICAS, replica_body(workers=2))
    world.api.fail.update({("create", name): denied() for name in (LEADER, WORKER_0, WORKER_1)})
    with pytest.raises(errors.Forbidden):
        await world.reconcile()
    world.api.fail.clear()
    world.api.attempts.clear()
    return world


async def test_creates_go_in_slow_start_batches_that_stop_at_the_first_failure() -> None:
    world = World()
    world.api.put(INFERENCE_REPLICAS, replica_body(workers=2))
    # Every pod is rejected, the later ones only after a while (their requests are still in flight).
    world.api.fail.update({("create", name): denied() for name in (LEADER, WORKER_0, WORKER_1)})
    world.api.yields.update({WORKER_0: 3, WORKER_1: 5})
    with pytest.raises(errors.Forbidden):
        await world.reconcile()
    # One pod tried (a batch of 1), the other two skipped; every expected creation was lowered.
    assert [a for a in world.api.attempts if a[1].startswith("chat-engine-0-")] == [("create", LEADER)]
    assert world.expectations.satisfied(KEY) and world.expectations.pending(KEY) == (0, 0)

    world.api.fail.clear()  # the rule is lifted: the retry creates the whole Instance
    await world.reconcile()
    assert sorted(world.pods()) == [LEADER, WORKER_0, WORKER_1]
    assert world.expectations.satisfied(KEY)


async def test_a_failed_sibling_does_not_strand_the_creates_still_in_flight() -> None:
    world = await gang_world()
    # Batch 1 (leader) succeeds; in batch 2 worker-0 fails at once while worker-1 is still in flight.
    world.api.fail[("create", WORKER_0)] = denied()
    world.api.yields[WORKER_1] = 5
    with pytest.raises(errors.Forbidden):
        await world.reconcile()
    # The whole batch was awaited: worker-1 exists and was observed, worker-0's failure lowered.
    assert sorted(world.pods()) == [LEADER, WORKER_1]
    assert world.expectations.pending(KEY) == (0, 0)

    world.api.fail.clear()
    result = await world.reconcile()  # not held back by expectations: the missing worker is created
    assert sorted(world.pods()) == [LEADER, WORKER_0, WORKER_1]
    assert result.requeue_after is not None


async def test_a_replica_whose_pod_events_are_late_is_requeued_not_dropped() -> None:
    world = World()
    world.api.put(INFERENCE_REPLICAS, replica_body(workers=2))
    world.api.deliver_later = True  # the pod informer lags our creates
    await world.reconcile()
    assert [w[2] for w in world.api.writes_of("create") if w[1] == "Pod"] == [LEADER, WORKER_0, WORKER_1]
    assert world.expectations.pending(KEY) == (3, 0)

    writes = len(world.api.writes)
    result = await world.reconcile()
    assert len(world.api.writes) == writes  # nothing written while the cache cannot be trusted
    assert result.requeue_after is not None and 0 < result.requeue_after <= EXPECTATIONS_TIMEOUT

    # The events are lost for good: once the expectations time out the requeued pass goes on.
    world.api.pending_events.clear()
    world.clock.now += EXPECTATIONS_TIMEOUT + 1
    world.kubelet()
    await world.reconcile()
    assert world.expectations.satisfied(KEY)
    assert len([w for w in world.api.writes_of("create") if w[1] == "Pod"]) == 3  # no duplicate
    assert world.api.writes_of("patch/status")  # the pass ran: the serving gates opened


async def test_a_failed_delete_lowers_its_expectation_and_the_other_deletes_still_happen() -> None:
    world = World()
    await world.serving(replicas=3)
    body = world.replica() or {}
    body["spec"]["replicas"] = 1
    await world.reconcile()  # Instances 1 and 2 drain
    world.kubelet()
    world.api.fail[("delete", "chat-engine-1-default-0")] = errors.ServerError(500, "InternalError", "etcd")
    world.api.yields["chat-engine-2-default-0"] = 3
    with pytest.raises(errors.ServerError):
        await world.reconcile()
    assert "chat-engine-2-default-0" not in world.pods()
    assert world.expectations.satisfied(KEY)
    world.api.fail.clear()
    await world.reconcile()
    assert sorted(world.pods()) == ["chat-engine-0-default-0"]


async def test_a_conflict_is_logged_at_info_with_its_key() -> None:
    world = World()
    await world.serving()
    (world.replica() or {})["spec"]["replicas"] = 2
    # Someone wrote the replica after the cache read it: the status write meets a 409.
    world.api.fail[("update_status", "chat-engine")] = errors.Conflict(409, "Conflict", "modified")
    with capture_logs() as logs, pytest.raises(errors.Conflict):
        await world.reconcile()
    conflicts = [e for e in logs if e["log_level"] == "info" and "Conflict" in e["event"]]
    assert conflicts and conflicts[0]["key"] == "ns/chat-engine"


async def test_an_instance_that_waits_is_logged_once_it_lasted_then_rate_limited() -> None:
    world = World()
    world.api.put(INFERENCE_REPLICAS, replica_body())
    with capture_logs() as logs:
        first = await world.reconcile()  # the pod is created; no kubelet: it never runs
        await world.reconcile()
    assert not [e for e in logs if e["event"] == "InferenceReplica waiting"]  # a short wait is normal
    assert first.requeue_after is not None and first.requeue_after <= 10.0  # the line is due then

    world.now = START + timedelta(seconds=11)
    with capture_logs() as logs:
        result = await world.reconcile()
        world.now = START + timedelta(seconds=60)
        await world.reconcile()  # rate-limited: no second line for the same wait
    waits = [e for e in logs if e["event"] == "InferenceReplica waiting"]
    assert len(waits) == 1
    line = waits[0]
    assert line["log_level"] == "info" and line["key"] == "ns/chat-engine" and line["instance"] == 0
    assert (line["phase"], line["operation"], line["step"]) == ("Creating", "Create", "CreatePods")
    assert line["waiting_on"] == "pods to run: chat-engine-0-default-0"
    assert line["since"] == "2026-01-01T00:00:00Z"
    assert result.requeue_after is not None


async def test_a_pod_recreated_under_its_name_counts_as_a_deletion_and_a_creation() -> None:
    """A relist that saw the old incarnation's pod go and the new one come reports one update."""
    world = World()
    world.expectations.expect_deletions(KEY, 1)
    world.expectations.raise_expectations(KEY, adds=1)
    owner = [{"controller": True, "kind": "InferenceReplica", "name": "chat-engine", "uid": "u-1"}]
    old = {"metadata": {"name": "p", "namespace": "ns", "uid": "a", "ownerReferences": owner,
                        "labels": {names.INCARNATION_LABEL: "1"}}}
    new = {"metadata": {**old["metadata"], "uid": "b", "labels": {names.INCARNATION_LABEL: "2"}}}
    for listener in world.api.listeners:
        listener("MODIFIED", new, old)
    assert world.expectations.satisfied(KEY)


async def test_an_edited_service_of_the_replica_is_put_back_and_a_settled_one_is_left_alone() -> None:
    world = World()
    await world.serving()
    headless = world.api.get(SERVICES, "chat-engine-headless")
    assert headless is not None
    world.api.writes.clear()
    await world.reconcile()
    assert world.api.writes == []
    headless["metadata"]["labels"].clear()  # an out-of-band edit of labels the controller sets
    headless["spec"]["ports"][0]["protocol"] = "TCP"  # a default the apiserver adds: not drift
    await world.reconcile()
    assert world.api.writes == [("apply", "Service", "chat-engine-headless")]
    assert (world.api.get(SERVICES, "chat-engine-headless") or {})["metadata"]["labels"]


async def test_a_restart_whose_pod_events_were_lost_after_a_conflict_does_not_stall() -> None:
    """The reported stall: Restarting / Restart / Drain with zero pods, the last line a 409."""
    world = World()
    world.api.put(INFERENCE_REPLICAS, replica_body(workers=2))
    await world.settle()
    world.api.writes.clear()
    await world.api.delete(PODS, WORKER_0, "ns")  # a pod of the Ready Instance fails
    # Restarting: the old pods leave rotation; the status write meets a 409 (the last line logged).
    world.api.fail[("update_status", "chat-engine")] = errors.Conflict(409, "Conflict", "modified")
    with pytest.raises(errors.Conflict):
        await world.reconcile()
    world.api.fail.clear()
    await world.reconcile()  # the retry writes the Restarting row
    world.kubelet()
    # The drained pods are deleted, and the informer relists: their DELETED events never arrive.
    world.api.deliver_later = True
    await world.reconcile()
    world.api.pending_events.clear()
    world.api.deliver_later = False
    assert world.pods() == {}
    row = (world.replica() or {})["status"]["instanceStatuses"][0]
    assert (row["phase"], row["operation"]["type"], row["operation"]["step"]) == ("Restarting", "Restart", "Drain")

    result = await world.reconcile()  # the next event's pass: the cache cannot be trusted yet
    assert result.requeue_after is not None  # requeued, not dropped

    world.clock.now += result.requeue_after + EXPECTATIONS_TIMEOUT  # the requeue fires; they expired
    await world.settle()
    row = (world.replica() or {})["status"]["instanceStatuses"][0]
    assert (row["phase"], row["incarnation"]) == ("Ready", 2)
    assert sorted(world.pods()) == [LEADER, WORKER_0, WORKER_1]


async def test_a_pod_delete_never_takes_a_same_named_pod_of_another_incarnation() -> None:
    world = World()
    await world.serving(replicas=2)
    (world.replica() or {})["spec"]["replicas"] = 1
    await world.reconcile()  # Instance 1 drains
    world.kubelet()
    name = "chat-engine-1-default-0"
    planned = copy.deepcopy(world.api.objects[("pods", "ns", name)])
    # The apiserver already holds another pod under the name; the cache still has the planned one.
    world.api.objects[("pods", "ns", name)]["metadata"]["uid"] = "newer"
    cache_get = world.api.get_or_none
    world.api.get_or_none = (  # type: ignore[method-assign]
        lambda res, pod, namespace=None: planned if pod == name else cache_get(res, pod, namespace)
    )
    await world.reconcile()
    assert world.pods()[name]["metadata"]["uid"] == "newer"
    assert world.expectations.satisfied(KEY)


async def test_a_conflict_from_a_metadata_write_does_not_lose_the_planned_status() -> None:
    world = World()
    world.api.put(INFERENCE_REPLICAS, replica_body(workers=2))
    await world.settle()
    await world.api.delete(PODS, WORKER_0, "ns")  # a pod of the Ready Instance fails
    # The cache read the replica before someone annotated it: its resourceVersion is stale.
    stale = copy.deepcopy(world.replica() or {})
    await world.api.patch(INFERENCE_REPLICAS, "chat-engine", {"metadata": {"annotations": {"x": "1"}}}, "ns")
    cache_get = world.api.get_or_none
    world.api.get_or_none = (  # type: ignore[method-assign]
        lambda res, name, namespace=None: stale if res is INFERENCE_REPLICAS else cache_get(res, name, namespace)
    )
    await world.reconcile()  # no 409 surfaces: the status (same on a live read) is written again
    row = (world.replica() or {})["status"]["instanceStatuses"][0]
    assert (row["phase"], row["incarnation"], row["operation"]["step"]) == ("Restarting", 2, "Drain")


async def test_a_conflict_from_a_status_write_is_raised_and_replanned() -> None:
    world = World()
    world.api.put(INFERENCE_REPLICAS, replica_body(workers=2))
    await world.settle()
    await world.api.delete(PODS, WORKER_0, "ns")
    stale = copy.deepcopy(world.replica() or {})
    current = world.replica() or {}
    await world.api.update_status(INFERENCE_REPLICAS, {**current, "status": {**current["status"], "x": 1}})
    cache_get = world.api.get_or_none
    world.api.get_or_none = (  # type: ignore[method-assign]
        lambda res, name, namespace=None: stale if res is INFERENCE_REPLICAS else cache_get(res, name, namespace)
    )
    with pytest.raises(errors.Conflict):
        await world.reconcile()


async def test_a_pod_delete_answered_not_found_is_logged_and_lowers_the_expectations() -> None:
    """The pod GC deleted the failed pod first: no error to back off on, but a line, since a pass that
    meets this over and over plans from a pod the watch never took out of the cache."""
    world = World()
    await world.serving()
    [name] = world.pods()
    world.pods()[name]["status"]["phase"] = "Failed"
    world.api.fail[("delete", name)] = errors.NotFound(404, "NotFound", f'pods "{name}" not found')
    with capture_logs() as logs:
        await world.reconcile()
    [line] = [e for e in logs if e["event"] == "Pod to delete already gone"]
    assert line["log_level"] == "info" and (line["key"], line["pod"], line["status"]) == (
        "ns/chat-engine", name, 404)
    assert world.expectations.satisfied(KEY)
