"""A ControllerRevision name held by something else bumps status.collisionCount, as StatefulSet does."""

from __future__ import annotations

from ome.api.resources import CONTROLLER_REVISIONS, INFERENCE_REPLICAS, PODS
from ome.omenative import instance_names as names
from ome.omenative import revisions
from tests.unit.controllers.inferencereplica.world import World
from tests.unit.omenative.builders import replica


def test_collision_count_salts_the_hash_and_zero_keeps_it() -> None:
    data = revisions.from_spec(replica()["spec"])
    assert data is not None
    assert revisions.revision_hash(data, 0) == revisions.revision_hash(data)
    assert revisions.revision_hash(data, 1) != revisions.revision_hash(data)


async def test_a_foreign_revision_under_our_name_bumps_the_collision_count() -> None:
    world = World()
    body = world.api.put(INFERENCE_REPLICAS, replica())
    data = revisions.from_spec(body["spec"])
    assert data is not None
    taken = names.revision_name("chat", "engine", revisions.revision_hash(data))
    world.api.put(
        CONTROLLER_REVISIONS,
        {
            "metadata": {
                "name": taken,
                "namespace": "ns",
                "ownerReferences": [{"uid": "other", "controller": True}],
            },
            "data": data.to_json(),
            "revision": 1,
        },
    )
    await world.reconcile()
    assert (world.replica() or {})["status"]["collisionCount"] == 1
    assert world.api.of(PODS) == []

    await world.settle()
    salted = revisions.revision_hash(data, 1)
    (pod,) = world.api.of(PODS)
    assert pod["metadata"]["labels"][names.REVISION_HASH_LABEL] == salted
    status = (world.replica() or {})["status"]
    assert status["updateRevision"] == f"chat-engine-{salted}" and status["collisionCount"] == 1


async def test_our_own_revision_missing_from_the_cache_is_no_collision() -> None:
    world = World()
    world.api.put(INFERENCE_REPLICAS, replica())
    await world.reconcile()
    (rev,) = world.api.of(CONTROLLER_REVISIONS)
    world.api.hidden.add(("controllerrevisions", "ns", rev["metadata"]["name"]))
    await world.reconcile()
    assert "collisionCount" not in (world.replica() or {})["status"]
