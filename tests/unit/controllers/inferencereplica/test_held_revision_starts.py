"""While the update revision is held, Instances that start run the replica's currentRevision: a held
revision stops updates until a newer revision replaces it (release-a-held-revision.md), and a canary
rollback holds the rejected revision with the component on its stable revision
(promote-or-roll-back-a-canary.md). Held by retries (a Held block in status.retryBlocks) or by a canary
rollback (rolledBackRevisionHash), a scale-up, a rebuild and a retried Create start on the stable revision;
a newer revision lifts it."""

from __future__ import annotations

from typing import Any

from ome.api.resources import INFERENCE_REPLICAS, INFERENCE_SERVICES, PODS
from ome.omenative import instance_names as names
from tests.unit.controllers.inferencereplica.world import World
from tests.unit.omenative.builders import runners

Obj = dict[str, Any]


def spec(world: World) -> Obj:
    rep = world.replica()
    assert rep is not None
    return rep


def hashes(world: World) -> dict[int, str]:
    """Instance index -> the revision hash its pods were created from."""
    return {
        int(p["metadata"]["labels"][names.INSTANCE_INDEX_LABEL]): p["metadata"]["labels"][names.REVISION_HASH_LABEL]
        for p in world.pods().values()
    }


async def new_revision(world: World) -> tuple[str, str]:
    """Serving one Instance on img:1 (revision A); the spec moves to img:2 (revision B), which the replica
    controller records (the rollout, not running here, would move the Instance). Returns (A, B)."""
    await world.serving(1)
    old = spec(world)["status"]["currentRevision"]
    rep = spec(world)
    rep["spec"]["runners"] = runners(image="img:2")
    world.api.put(INFERENCE_REPLICAS, rep)
    await world.settle(2)
    new = spec(world)["status"]["updateRevision"]
    assert new != old and spec(world)["status"]["currentRevision"] == old
    return old, new


def hold_by_retries(world: World, revision: str) -> None:
    rep = spec(world)
    rep["status"]["retryBlocks"] = [{
        "targetRevision": revision, "state": "Held", "attemptsStarted": 1, "reason": "ImagePullBackOff",
        "firstFailureAt": "2026-01-01T00:00:00Z", "lastFailureAt": "2026-01-01T00:00:00Z",
    }]
    world.api.put(INFERENCE_REPLICAS, rep)


def hold_by_canary(world: World, rejected: str) -> None:
    """The canary controller's record of a rollback on the InferenceService."""
    world.api.put(INFERENCE_SERVICES, {
        "apiVersion": "ome.io/v1beta1", "kind": "InferenceService",
        "metadata": {"name": "chat", "namespace": "ns", "generation": 2},
        "spec": {"deploymentMode": "OMENative", "rollout": {"groups": [{
            "components": ["engine"], "canary": {"steps": [{"capacity": "50%", "traffic": 50, "pause": {}}]},
        }]}},
        "status": {"components": {"engine": {
            "rolloutPhase": "RolledBack",
            "canary": {"rolledBackRevisionHash": names.hash_of_revision(rejected), "currentStep": 0},
        }}},
    })


async def scale(world: World, replicas: int) -> None:
    rep = spec(world)
    rep["spec"]["replicas"] = replicas
    world.api.put(INFERENCE_REPLICAS, rep)
    await world.settle(3)


async def test_a_scale_up_while_retries_hold_the_update_revision_starts_on_the_current_one() -> None:
    world = World()
    old, new = await new_revision(world)
    hold_by_retries(world, new)
    await scale(world, 2)
    assert hashes(world) == {0: names.hash_of_revision(old), 1: names.hash_of_revision(old)}
    rows = spec(world)["status"]["instanceStatuses"]
    assert [(r["index"], r["runningRevision"], r["phase"]) for r in rows] == [(0, old, "Ready"), (1, old, "Ready")]
    assert spec(world)["status"]["updateRevision"] == new  # still the spec's: only the starts moved
    assert spec(world)["status"]["retryBlocks"][0]["state"] == "Held"


async def test_a_scale_up_while_a_canary_rollback_holds_the_revision_starts_on_the_stable_one() -> None:
    world = World()
    old, new = await new_revision(world)
    hold_by_canary(world, new)
    await scale(world, 3)
    assert hashes(world) == {i: names.hash_of_revision(old) for i in range(3)}


async def test_without_a_hold_a_scale_up_starts_on_the_update_revision() -> None:
    world = World()
    old, new = await new_revision(world)
    hold_by_retries(world, "chat-engine-0000000f")  # a block of another revision holds nothing here
    await scale(world, 2)
    assert hashes(world) == {0: names.hash_of_revision(old), 1: names.hash_of_revision(new)}


async def test_a_newer_revision_lifts_the_hold_for_new_instances() -> None:
    world = World()
    old, new = await new_revision(world)
    hold_by_canary(world, new)
    rep = spec(world)
    rep["spec"]["runners"] = runners(image="img:3")  # the fix: neither the rejected nor the stable revision
    rep["spec"]["replicas"] = 2
    world.api.put(INFERENCE_REPLICAS, rep)
    await world.settle(3)
    newest = spec(world)["status"]["updateRevision"]
    assert newest not in (old, new)
    assert hashes(world)[1] == names.hash_of_revision(newest)


async def test_a_lost_instance_on_the_held_revision_is_rebuilt_on_the_current_one() -> None:
    """An Instance that ran the rejected revision (a canary step) and lost its pod before the rollout
    moved it back: the rebuild starts it on the stable revision, not on the rejected one."""
    world = World()
    old, new = await new_revision(world)
    await scale(world, 2)  # no hold yet: Instance 1 starts on the canary revision
    assert hashes(world)[1] == names.hash_of_revision(new)
    hold_by_canary(world, new)
    [lost] = [n for n, p in world.pods().items() if p["metadata"]["labels"][names.INSTANCE_INDEX_LABEL] == "1"]
    await world.api.delete(PODS, lost, "ns")
    await world.settle(4)
    assert hashes(world) == {0: names.hash_of_revision(old), 1: names.hash_of_revision(old)}
    rows = {r["index"]: r for r in spec(world)["status"]["instanceStatuses"]}
    assert rows[1]["runningRevision"] == old and rows[1]["phase"] == "Ready"
