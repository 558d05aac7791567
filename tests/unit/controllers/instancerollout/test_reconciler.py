"""Both OMENative controllers on one in-memory apiserver: a rollout moves Instances while the replica
controller keeps the set, and neither undoes the other."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest

from ome.api.resources import INFERENCE_REPLICAS, PODS
from ome.controllers import quota_view
from ome.controllers.inferencereplica import create_holds
from ome.controllers.inferencereplica.pod_groups import PODGROUPS
from ome.controllers.instancerollout.reconciler import InstanceRolloutReconciler
from ome.framework import errors
from ome.framework.reconcile import Request
from ome.omenative import instance_names as names
from ome.omenative.pods_view import format_time
from ome.omenative.rollout_retry import RetryPolicy
from ome.omenative.rollout_settings import RolloutSettings
from tests.unit.controllers.inferencereplica.world import World
from tests.unit.omenative.builders import replica as replica_body
from tests.unit.omenative.builders import runners

Obj = dict[str, Any]
REQ = Request("ns", "chat-engine")


def rollout(world: World, **settings: Any) -> InstanceRolloutReconciler:
    return InstanceRolloutReconciler(
        world.client,  # type: ignore[arg-type]
        world.api,  # type: ignore[arg-type]
        RolloutSettings(**settings),
        recorder=world.recorder,  # type: ignore[arg-type]
        now=lambda: world.now,
    )


async def start(world: World, strategy: Obj, replicas: int = 3) -> None:
    world.api.put(INFERENCE_REPLICAS, replica_body(replicas=replicas, lifecycle={"updateStrategy": strategy}))
    await world.settle()


def change_image(world: World, image: str) -> None:
    replica = world.replica()
    assert replica is not None
    replica["spec"]["runners"] = runners(image=image)
    replica["metadata"]["generation"] += 1


def serving_instances(world: World) -> int:
    serving = set()
    for pod in world.pods().values():
        conds = {c["type"]: c["status"] for c in (pod.get("status") or {}).get("conditions") or []}
        if conds.get("Ready") == "True" and not pod["metadata"].get("deletionTimestamp"):
            serving.add(pod["metadata"]["labels"][names.INSTANCE_INDEX_LABEL])
    return len(serving)


def rows(world: World) -> list[Obj]:
    return copy.deepcopy((world.replica() or {})["status"]["instanceStatuses"])


async def run(world: World, mover: InstanceRolloutReconciler, rounds: int = 40) -> list[int]:
    seen = []
    for _ in range(rounds):
        await world.reconcile()
        world.kubelet()
        seen.append(serving_instances(world))
        await mover.reconcile(REQ)
        world.kubelet()
        seen.append(serving_instances(world))
        world.now += timedelta(seconds=1)
        status = (world.replica() or {})["status"]
        if status["currentRevision"] == status["updateRevision"] and len(world.pods()) == 3:
            break
    return seen


async def test_surge_rollout_moves_every_instance_without_dropping_service() -> None:
    world = World()
    await start(world, {"type": "SurgeThenDrain", "rollingUpdate": {"maxSurge": 1}})
    mover = rollout(world)
    change_image(world, "img:2")
    seen = await run(world, mover)
    assert min(seen) >= 3
    status = (world.replica() or {})["status"]
    assert {r["runningRevision"] for r in status["instanceStatuses"]} == {status["updateRevision"]}
    assert status["currentRevision"] == status["updateRevision"]
    assert sorted(world.pods()) == [f"chat-engine-{i}-default-1" for i in range(3)]
    # Settled: a pass of either controller writes nothing.
    before = len(world.api.writes)
    await mover.reconcile(REQ)
    await world.reconcile()
    assert len(world.api.writes) == before and mover.writes > 0


async def test_a_projected_replica_at_zero_rolls_the_instance_it_keeps() -> None:
    """A replica with a parent at `replicas: 0` keeps one Instance (the replica controller never runs 0);
    the rollout resolves its percentage budget against that Instance, not against 0, so it moves it."""
    world = World()
    await start(world, {"type": "SurgeThenDrain", "rollingUpdate": {"maxSurge": "10%"}}, replicas=0)
    assert len(world.pods()) == 1
    mover = rollout(world)
    change_image(world, "img:2")
    for _ in range(20):
        await world.reconcile()
        world.kubelet()
        await mover.reconcile(REQ)
        world.kubelet()
        world.now += timedelta(seconds=1)
    status = (world.replica() or {})["status"]
    assert status["currentRevision"] == status["updateRevision"]
    assert sorted(world.pods()) == ["chat-engine-0-default-1"]


async def test_recreate_rollout_keeps_to_max_unavailable() -> None:
    world = World()
    await start(world, {"type": "RecreatePod", "rollingUpdate": {"maxUnavailable": 1}})
    mover = rollout(world)
    change_image(world, "img:2")
    seen = await run(world, mover)
    assert min(seen) == 2
    assert {p["metadata"]["labels"][names.INCARNATION_LABEL] for p in world.pods().values()} == {"2"}
    assert (world.replica() or {})["status"]["currentRevision"] == (world.replica() or {})["status"][
        "updateRevision"
    ]


async def test_replica_controller_keeps_the_rollout_fields() -> None:
    world = World()
    await start(world, {"type": "SurgeThenDrain", "rollingUpdate": {"maxSurge": 1}})
    mover = rollout(world, retry=RetryPolicy())
    change_image(world, "img:2")
    await world.reconcile()
    await mover.reconcile(REQ)
    moving = [r for r in rows(world) if r["phase"] == "Updating"]
    assert len(moving) == 1 and (world.replica() or {})["status"]["rolloutHold"]["gate"] == "Budget"
    world.kubelet()
    await world.reconcile()  # the replica controller's own status write keeps the Updating row
    kept = [r for r in rows(world) if r["phase"] == "Updating"]
    assert [r["operation"] for r in kept] == [r["operation"] for r in moving]
    status = (world.replica() or {})["status"]
    assert status["rolloutHold"]["gate"] == "Budget"
    assert [r["phase"] for r in status["instanceStatuses"]].count("Updating") == 1


async def test_a_pod_the_api_server_rejects_holds_the_revision_as_invalid_pod_spec() -> None:
    world = World()
    await start(world, {"type": "SurgeThenDrain", "rollingUpdate": {"maxSurge": 1}})
    mover = rollout(world)  # no updateRetry: the first counted failure holds
    world.api.fail[("create", "chat-engine-0-default-1")] = errors.Invalid(422, "Invalid", "spec: invalid")
    change_image(world, "img:2")
    await run(world, mover, rounds=4)
    status = (world.replica() or {})["status"]
    [block] = status["retryBlocks"]
    assert (block["state"], block["reason"], block["attemptsStarted"]) == ("Held", "InvalidPodSpec", 1)
    assert status["rolloutHold"]["gate"] == "Held"
    assert {r["runningRevision"] for r in status["instanceStatuses"]} == {status["currentRevision"]}
    assert [e for e in world.recorder.events if e[1] == "RetryHeld"]
    assert serving_instances(world) == 3


async def test_zero_timeouts_count_as_unset() -> None:
    world = World()
    strategy = {"type": "SurgeThenDrain", "rollingUpdate": {"maxSurge": 1}}
    world.api.put(
        INFERENCE_REPLICAS,
        replica_body(replicas=1, lifecycle={"updateStrategy": strategy, "instanceReadyTimeout": "0s"}),
    )
    await world.settle()
    mover = rollout(world, instance_ready_timeout=0.0)
    change_image(world, "img:2")
    await world.reconcile()
    await mover.reconcile(REQ)
    [row] = rows(world)
    assert row["phase"] == "Updating" and "deadline" not in row["operation"]


async def test_a_surge_pod_create_the_quota_rejects_is_made_on_the_next_pass() -> None:
    """A rejected create is not remembered as made: the retry after the error creates the pod (it used
    to be skipped for 30 s as a write the cache had not shown yet, and nothing woke the replica after)."""
    world = World()
    await start(world, {"type": "SurgeThenDrain", "rollingUpdate": {"maxSurge": 1}})
    mover = rollout(world)
    surge = "chat-engine-0-default-1"
    world.api.fail[("create", surge)] = errors.Forbidden(
        403, "Forbidden", f'pods "{surge}" is forbidden: exceeded quota: q, requested: pods=1, used: pods=3, '
        "limited: pods=3"
    )
    change_image(world, "img:2")
    await world.reconcile()
    with pytest.raises(errors.Forbidden):
        await mover.reconcile(REQ)
    assert surge not in world.pods()
    del world.api.fail[("create", surge)]  # the quota is raised
    await mover.reconcile(REQ)  # the work queue's retry of the failed pass
    assert surge in world.pods()


async def test_a_write_skipped_as_remembered_wakes_the_replica_when_the_memory_ends() -> None:
    """Pod names repeat across incarnations: a write remembered under a name the cache shows again (a
    pod deleted and recreated under it) is skipped, and no event may come to retry it, so the pass asks
    to run again by the time the memory ends (found by the fault suite: a drain stalled)."""
    world = World()
    await start(world, {"type": "SurgeThenDrain", "rollingUpdate": {"maxSurge": 1}})
    mover = rollout(world)
    change_image(world, "img:2")
    await world.reconcile()
    mover._recent.skip("create", "ns", "chat-engine-0-default-1")  # remembered as made just now
    result = await mover.reconcile(REQ)
    assert "chat-engine-0-default-1" not in world.pods()
    assert result.requeue_after is not None and 0 < result.requeue_after <= 30


async def test_a_recorded_step_writes_pods_with_the_status_and_a_start_creates_after_it() -> None:
    """A pod write that continues a step the cached status already records (the old pod's gate once
    the surge pod serves) goes out while the status write is in flight; a start's create waits for the
    status write that records the operation."""
    world = World()
    await start(world, {"type": "SurgeThenDrain", "rollingUpdate": {"maxSurge": 1}})
    mover = rollout(world)
    change_image(world, "img:2")
    await world.reconcile()
    world.api.yields["chat-engine"] = 5  # the status write answers after the pod writes started
    world.api.writes.clear()
    await mover.reconcile(REQ)
    writes = [(verb, name) for verb, _, name in world.api.writes]
    assert writes.index(("update_status", "chat-engine")) < writes.index(("create", "chat-engine-0-default-1"))
    for _ in range(3):
        world.kubelet()
        world.api.writes.clear()
        await mover.reconcile(REQ)
        writes = [(verb, name) for verb, _, name in world.api.writes]
        if ("patch/status", "chat-engine-0-default-0") in writes:
            break
    [row] = [r for r in rows(world) if r["index"] == 0]
    assert row["operation"]["step"] == "SurgeDrain"
    assert writes.index(("patch/status", "chat-engine-0-default-0")) < writes.index(
        ("update_status", "chat-engine")
    )


async def test_a_quota_refusal_shows_as_waiting_quota_exceeded_until_the_pod_is_made() -> None:
    world = World()
    await start(world, {"type": "SurgeThenDrain", "rollingUpdate": {"maxSurge": 1}})
    mover = rollout(world)
    surge = "chat-engine-0-default-1"
    world.api.fail[("create", surge)] = errors.Forbidden(
        403, "Forbidden", f'pods "{surge}" is forbidden: exceeded quota: q, requested: pods=1, used: pods=3, '
        "limited: pods=3"
    )
    change_image(world, "img:2")
    await world.reconcile()
    with pytest.raises(errors.Forbidden):
        await mover.reconcile(REQ)  # a first refusal: the error backoff's short first step records it
    # The retry records the hold and tries again; once shown, a refusal is retried on a bounded
    # interval rather than the work queue's growing error backoff (up to 1000 s).
    result = await mover.reconcile(REQ)
    assert result.requeue_after is not None and 0 < result.requeue_after <= quota_view.QUOTA_RECHECK <= 30
    [row] = [r for r in rows(world) if r["index"] == 0]
    assert row["operation"]["waiting"] == "QuotaExceeded"
    world.api.writes.clear()
    attempts = len(world.api.attempts)
    again = await mover.reconcile(REQ)  # the recheck: the create is tried again, no other write
    assert again.requeue_after is not None and again.requeue_after <= quota_view.QUOTA_RECHECK
    assert world.api.attempts[attempts:] == [("create", surge)] and world.api.writes == []
    del world.api.fail[("create", surge)]
    await mover.reconcile(REQ)
    await mover.reconcile(REQ)
    [row] = [r for r in rows(world) if r["index"] == 0]
    assert surge in world.pods() and "waiting" not in row["operation"]


async def test_an_instance_on_ordinal_one_is_rebuilt_at_its_ordinal() -> None:
    """After a SurgeThenDrain update the Instance's pod sits at ordinal 1 (`activeOrdinal`). A restart
    rebuilds it there: the replica controller used to render only ordinal 0 and so created nothing for
    the restart's `...-default-1`, and the Instance waited for its deadline."""
    world = World()
    strategy = {"type": "SurgeThenDrain", "rollingUpdate": {"maxSurge": 1}}
    world.api.put(INFERENCE_REPLICAS, replica_body(
        replicas=1, lifecycle={"updateStrategy": strategy, "restartPolicy": "RecreateInstanceOnPodRestart"}))
    await world.settle()
    mover = rollout(world)
    change_image(world, "img:2")
    await run(world, mover)
    [row] = rows(world)
    assert row["activeOrdinal"] == 1 and sorted(world.pods()) == ["chat-engine-0-default-1"]
    await world.api.delete(PODS, "chat-engine-0-default-1", "ns")  # lost: the policy restarts it whole
    for _ in range(4):
        await world.reconcile()
        world.kubelet()
    [row] = rows(world)
    [pod] = world.pods().values()
    assert pod["metadata"]["name"] == "chat-engine-0-default-1"
    assert pod["metadata"]["labels"][names.POD_ORDINAL_LABEL] == "1"
    assert pod["metadata"]["labels"][names.INCARNATION_LABEL] == "2"
    assert row["phase"] == "Ready" and row["incarnation"] == 2


async def gang_surge(world: World, mover: InstanceRolloutReconciler) -> set[str]:
    """An image change of a leader + 2 workers Instance, rolled until its replacement serves; returns
    every PodGroup name seen on the way."""
    world.api.served.add("podgroups")
    strategy = {"type": "SurgeThenDrain", "rollingUpdate": {"maxSurge": 1}}
    world.api.put(INFERENCE_REPLICAS, replica_body(workers=2, replicas=1, lifecycle={"updateStrategy": strategy}))
    await world.settle()
    assert [g["metadata"]["name"] for g in world.api.of(PODGROUPS)] == ["chat-engine-0"]
    replica = world.replica()
    assert replica is not None
    replica["spec"]["runners"] = runners(workers=2, image="img:2")
    replica["metadata"]["generation"] += 1
    made: set[str] = set()
    for _ in range(30):
        await world.reconcile()
        world.kubelet()
        await mover.reconcile(REQ)
        world.kubelet()
        made |= {g["metadata"]["name"] for g in world.api.of(PODGROUPS)}
        world.now += timedelta(seconds=1)
        if [r["index"] for r in rows(world)] == [1] and rows(world)[0]["phase"] == "Ready":
            break
    return made


async def test_a_gang_surge_replacement_gets_its_pod_group_and_the_source_loses_its_own() -> None:
    """With the PodGroup CRD served, each multi-pod Instance has a PodGroup (docs: Instances): the
    replica controller makes the first, the rollout makes the replacement's at its new index and
    removes the source's once it promotes the replacement."""
    world = World()
    made = await gang_surge(world, rollout(world))
    [row] = rows(world)
    assert row["index"] == 1 and row["runningRevision"] == (world.replica() or {})["status"]["updateRevision"]
    assert "chat-engine-1" in made
    [group] = world.api.of(PODGROUPS)
    assert group["metadata"]["name"] == "chat-engine-1" and group["spec"]["minMember"] == 3
    assert group["spec"]["scheduleTimeoutSeconds"] == 1800  # no bounds: the ready timeout alone


async def test_a_gang_replacement_pod_group_takes_the_clamped_schedule_timeout() -> None:
    """gang-scheduling.md: scheduleTimeoutSeconds is the ready timeout clamped to gangScheduleTimeout; the
    rollout's replacement PodGroup follows the same rule as the replica controller's."""
    world = World()
    await gang_surge(world, rollout(world, instance_ready_timeout=1800.0, gang_schedule_timeout=(60.0, 600.0)))
    [group] = world.api.of(PODGROUPS)
    assert group["metadata"]["name"] == "chat-engine-1" and group["spec"]["scheduleTimeoutSeconds"] == 600


async def test_a_gang_surge_whose_pod_group_name_is_terminating_waits_without_pods() -> None:
    """The replacement's PodGroup name at its new index is still held by a PodGroup being deleted (an
    earlier attempt's): no replacement pod is made, the update waits with `PodGroupTerminating`, looks
    again shortly, and surges once the name is free."""
    world = World()
    world.api.served.add("podgroups")
    strategy = {"type": "SurgeThenDrain", "rollingUpdate": {"maxSurge": 1}}
    world.api.put(INFERENCE_REPLICAS, replica_body(workers=2, replicas=1, lifecycle={"updateStrategy": strategy}))
    await world.settle()
    world.api.put(PODGROUPS, {"metadata": {"name": "chat-engine-1", "namespace": "ns", "finalizers": ["x"],
                                           "deletionTimestamp": format_time(world.now)},
                              "spec": {"minMember": 3}})
    mover = rollout(world)
    replica = world.replica()
    assert replica is not None
    replica["spec"]["runners"] = runners(workers=2, image="img:2")
    replica["metadata"]["generation"] += 1
    await world.reconcile()
    result = None
    for _ in range(3):
        result = await mover.reconcile(REQ)
    target = next(r for r in rows(world) if r["index"] == 1)
    assert target["operation"]["waiting"] == "PodGroupTerminating"
    assert not [n for n in world.pods() if n.startswith("chat-engine-1-")]
    assert result is not None and result.requeue_after is not None
    assert result.requeue_after <= create_holds.POD_GROUP_RECHECK
    del world.api.objects[("podgroups", "ns", "chat-engine-1")]  # the deletion finished
    await mover.reconcile(REQ)
    assert sorted(n for n in world.pods() if n.startswith("chat-engine-1-")) == [
        "chat-engine-1-leader-0", "chat-engine-1-worker-0", "chat-engine-1-worker-1"]
    await mover.reconcile(REQ)  # the pass after the creates records that the hold ended
    target = next(r for r in rows(world) if r["index"] == 1)
    assert "waiting" not in target["operation"]
