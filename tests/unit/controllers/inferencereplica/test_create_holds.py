"""Holds on the InferenceReplica controller's own operations (Create, Restart): a ResourceQuota that
refuses their pods (`operation.waiting: QuotaExceeded`, retried on a bounded interval and on quota
events instead of the error backoff) and an earlier attempt's PodGroup still being deleted
(`PodGroupTerminating`). The clock stops while held; a full window once the hold ends."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from ome.api.resources import INFERENCE_REPLICAS, PODS
from ome.controllers import quota_view
from ome.controllers.inferencereplica import create_holds
from ome.controllers.inferencereplica.pod_groups import PODGROUPS
from ome.framework import errors
from ome.omenative import operation_holds
from ome.omenative.pods_view import format_time, parse_time
from tests.unit.controllers.inferencereplica.world import START, World
from tests.unit.omenative.builders import replica as replica_body

Obj = dict[str, Any]
LEADER, WORKER_0, WORKER_1 = "chat-engine-0-leader-0", "chat-engine-0-worker-0", "chat-engine-0-worker-1"
SINGLE = "chat-engine-0-default-0"


def quota(name: str) -> errors.Forbidden:
    return errors.Forbidden(403, "Forbidden", f'pods "{name}" is forbidden: exceeded quota: gpus, '
                            "requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=8, limited: 8")


def row(world: World) -> Obj:
    [only] = (world.replica() or {})["status"]["instanceStatuses"]
    return dict(only)


async def test_a_quota_refused_create_waits_as_quota_exceeded_with_its_clock_stopped() -> None:
    world = World(instance_ready_timeout=600.0)
    world.api.put(INFERENCE_REPLICAS, replica_body())
    world.api.fail[("create", SINGLE)] = quota(SINGLE)
    result = await world.reconcile()  # not raised: a hold, not an error to back off on
    assert result.requeue_after is not None and result.requeue_after <= quota_view.QUOTA_RECHECK <= 30
    held = row(world)
    assert held["phase"] == "Creating" and held["operation"]["type"] == "Create"
    assert held["operation"]["waiting"] == "QuotaExceeded"

    world.now = START + timedelta(seconds=3600)  # far past the deadline: a held clock does not fail it
    world.api.writes.clear()
    again = await world.reconcile()
    assert row(world)["phase"] == "Creating" and row(world)["operation"]["waiting"] == "QuotaExceeded"
    assert again.requeue_after is not None and again.requeue_after <= quota_view.QUOTA_RECHECK
    assert world.api.writes == []  # the retry was refused again: nothing changed, nothing written

    del world.api.fail[("create", SINGLE)]  # the quota is raised
    await world.reconcile()
    assert SINGLE in world.pods()
    after = row(world)
    assert "waiting" not in after["operation"] and after["phase"] == "Creating"
    assert after["operation"]["deadline"] == format_time(world.now + timedelta(seconds=600))  # full window


async def test_a_quota_refused_restart_waits_as_quota_exceeded() -> None:
    """A multi-pod Instance (RecreateInstanceOnPodRestart) loses a worker: the Restart recreates all its
    pods, and a quota that refuses them holds the Restart."""
    world = World()
    world.api.put(INFERENCE_REPLICAS, replica_body(workers=2))
    await world.settle()
    assert row(world)["phase"] == "Ready"
    await world.api.delete(PODS, WORKER_1, "ns")
    for _ in range(6):
        await world.reconcile()
        world.kubelet()
        if not world.pods():
            break
    assert row(world)["phase"] == "Restarting" and not world.pods()
    world.api.fail.update({("create", n): quota(n) for n in (LEADER, WORKER_0, WORKER_1)})
    result = await world.reconcile()
    held = row(world)
    assert held["phase"] == "Restarting" and held["operation"]["type"] == "Restart"
    assert held["operation"]["waiting"] == "QuotaExceeded"
    assert result.requeue_after is not None and result.requeue_after <= quota_view.QUOTA_RECHECK
    world.api.fail.clear()
    await world.reconcile()
    assert sorted(world.pods()) == [LEADER, WORKER_0, WORKER_1]
    assert "waiting" not in row(world)["operation"]


async def test_another_refusal_is_still_an_error_and_writes_no_wait() -> None:
    world = World()
    world.api.put(INFERENCE_REPLICAS, replica_body())
    world.api.fail[("create", SINGLE)] = errors.Forbidden(403, "Forbidden", "admission webhook denied the request")
    with pytest.raises(errors.Forbidden):  # a non-quota refusal goes to the error backoff
        await world.reconcile()
    rows = ((world.replica() or {}).get("status") or {}).get("instanceStatuses") or []
    assert all("waiting" not in (r.get("operation") or {}) for r in rows)


def test_settle_leaves_other_operations_and_restarts_the_window_when_a_hold_ends() -> None:
    now = START + timedelta(minutes=5)
    create = {"index": 0, "operation": {"type": "Create", "step": "CreatePods", "deadline": "x"}}
    update = {"index": 1, "operation": {"type": "Update", "step": "Surge", "waiting": "QuotaExceeded"}}
    restart = {"index": 2, "operation": {"type": "Restart", "step": "Drain", "waiting": "QuotaExceeded"}}
    out = operation_holds.settle([create, update, restart], {0: "QuotaExceeded"}, now, 60.0)
    assert out[0]["operation"]["waiting"] == "QuotaExceeded" and out[0]["operation"]["deadline"] == "x"
    assert out[1] is update  # the rollout's hold is the rollout's
    assert "waiting" not in out[2]["operation"]
    assert parse_time(out[2]["operation"]["deadline"]) == now + timedelta(seconds=60)
    assert operation_holds.held(out[0]) and not operation_holds.held(out[1])


async def test_an_instance_whose_pod_group_is_still_terminating_waits_without_pods() -> None:
    """The PodGroup of an earlier attempt at the same index is still being deleted: pods made now would
    join it on its way out, so the Create waits (`PodGroupTerminating`), its clock stopped, and looks
    again shortly (no informer watches PodGroups); once the name is free the group and pods are made."""
    world = World(instance_ready_timeout=600.0)
    world.api.served.add("podgroups")
    world.api.put(PODGROUPS, {"metadata": {"name": "chat-engine-0", "namespace": "ns", "finalizers": ["x"],
                                           "deletionTimestamp": format_time(START)},
                              "spec": {"minMember": 3}})
    world.api.put(INFERENCE_REPLICAS, replica_body(workers=2))
    result = await world.reconcile()
    assert not world.pods()
    held = row(world)
    assert held["phase"] == "Creating" and held["operation"]["waiting"] == "PodGroupTerminating"
    assert result.requeue_after is not None and result.requeue_after <= create_holds.POD_GROUP_RECHECK
    assert world.expectations.satisfied(("ns", "chat-engine"))  # the skipped pods are not awaited

    world.now = START + timedelta(seconds=3600)  # past the deadline: a held clock does not fail it
    await world.reconcile()
    assert row(world)["phase"] == "Creating" and not world.pods()

    del world.api.objects[("podgroups", "ns", "chat-engine-0")]  # its finalizer is done: it is gone
    await world.reconcile()
    assert sorted(world.pods()) == [LEADER, WORKER_0, WORKER_1]
    [group] = world.api.of(PODGROUPS)
    assert "deletionTimestamp" not in group["metadata"]
    after = row(world)
    assert "waiting" not in after["operation"]
    assert after["operation"]["deadline"] == format_time(world.now + timedelta(seconds=600))
