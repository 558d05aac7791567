"""A new replica's first pass makes its independent writes together: the finalizer beside the
ControllerRevision, the Services beside the pods (one round trip each instead of one per write)."""

from __future__ import annotations

import pytest

from ome.api.resources import INFERENCE_REPLICAS
from ome.framework import errors
from tests.unit.controllers.inferencereplica.world import World
from tests.unit.omenative.builders import replica as replica_body

POD = "chat-engine-0-default-0"


def kinds(world: World) -> list[tuple[str, str]]:
    return [(verb, kind) for verb, kind, _ in world.api.writes]


async def test_the_revision_is_created_while_the_finalizer_patch_is_in_flight() -> None:
    world = World()
    world.api.put(INFERENCE_REPLICAS, replica_body())
    world.api.yields["chat-engine"] = 5  # the replica's own writes answer slowly
    await world.reconcile()
    order = kinds(world)
    assert order.index(("create", "ControllerRevision")) < order.index(("patch", "InferenceReplica"))


async def test_the_services_are_created_while_the_pod_create_is_in_flight() -> None:
    world = World()
    world.api.put(INFERENCE_REPLICAS, replica_body())
    world.api.yields[POD] = 5
    await world.reconcile()
    order = kinds(world)
    services = [i for i, w in enumerate(order) if w == ("create", "Service")]
    assert len(services) >= 2  # the headless Service and the revision's
    assert max(services) < order.index(("create", "Pod"))


async def test_a_failed_pod_create_is_raised_and_the_status_left_unwritten() -> None:
    world = World()
    world.api.put(INFERENCE_REPLICAS, replica_body())
    world.api.fail[("create", POD)] = errors.ServerError(500, "InternalError", "etcd timeout")
    with pytest.raises(errors.ServerError):
        await world.reconcile()
    assert ("create", "Service") in kinds(world)  # its sibling writes still finished
    assert not [w for w in world.api.writes if w[0] == "update_status"]
