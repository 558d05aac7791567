"""A replica's Service creates run beside the pass (framework/write_behind.py): the pass creates its pods
and writes its status without waiting for the apiserver's ClusterIP allocator; a pass meanwhile makes no
second create; a failed create requeues the replica and is next made inline, its error raised."""

from __future__ import annotations

import asyncio

import pytest

from ome.api.resources import INFERENCE_REPLICAS, PODS, SERVICES
from ome.framework import errors
from ome.framework.write_behind import WriteBehind
from tests.unit.controllers.inferencereplica.world import REQ, World
from tests.unit.omenative.builders import replica as replica_body


def service_names(world: World) -> list[str]:
    return sorted(s["metadata"]["name"] for s in world.api.of(SERVICES))


async def a_world_with_its_services_known() -> tuple[World, list[str]]:
    """The Services one pass of this replica creates, learnt inline on a throwaway world."""
    probe = World()
    probe.api.put(INFERENCE_REPLICAS, replica_body())
    await probe.reconcile()
    names = service_names(probe)
    assert names
    return probe, names


async def test_the_pass_goes_on_while_its_service_creates_wait_for_the_allocator() -> None:
    _, names = await a_world_with_its_services_known()
    behind = WriteBehind()
    world = World(write_behind=behind)
    world.api.put(INFERENCE_REPLICAS, replica_body())
    world.api.yields.update({name: 50 for name in names})  # slow answers: the allocator under load
    await world.reconcile()
    assert service_names(world) == []  # not answered yet, and the pass is done
    assert world.api.of(PODS)  # its pods were created meanwhile
    assert all(behind.in_flight((SERVICES.name, "ns", name)) for name in names)
    await world.reconcile()  # a pod's event: no second create of the Services on their way
    assert sorted(a[1] for a in world.api.attempts if a[1] in names) == names
    for name in names:
        await behind.wait((SERVICES.name, "ns", name))
    assert service_names(world) == names


async def test_a_failed_service_create_requeues_the_replica_and_the_next_pass_raises_it() -> None:
    _, names = await a_world_with_its_services_known()
    behind, requeued = WriteBehind(), []
    behind.bind(requeued.append, lambda owner: None)
    world = World(write_behind=behind)
    world.api.put(INFERENCE_REPLICAS, replica_body())
    refusal = errors.Forbidden(403, "Forbidden", 'admission webhook "svc.example.com" denied the request')
    world.api.fail[("create", names[0])] = refusal
    await world.reconcile()
    await behind.wait((SERVICES.name, "ns", names[0]))
    assert requeued == [REQ] and behind.failed((SERVICES.name, "ns", names[0]))
    with pytest.raises(errors.Forbidden):
        await world.reconcile()  # inline now: the controller's error path and backoff
    world.api.fail.clear()
    await world.reconcile()
    await asyncio.sleep(0)
    assert names[0] in service_names(world)
    assert not behind.failed((SERVICES.name, "ns", names[0]))
