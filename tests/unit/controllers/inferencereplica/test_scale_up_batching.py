"""lifecycle.scaleUpPodBatchSize in the InferenceReplica reconciler (configure-pod-batching.md): each pass
creates the missing pods of whole Instances up to the budget, and the next passes create the rest."""

from __future__ import annotations

from ome.api.resources import INFERENCE_REPLICAS
from tests.unit.controllers.inferencereplica.world import World
from tests.unit.omenative.builders import replica as replica_body


async def test_a_scale_up_is_created_in_batches_of_whole_instances() -> None:
    """Budget 4 and Instances of a leader + 1 worker: two Instances (4 pods) per pass, never half of one."""
    world = World(scale_up_pod_batch_size=4)
    world.api.put(INFERENCE_REPLICAS, replica_body(replicas=5, workers=1))
    seen: list[int] = []
    for _ in range(12):
        await world.reconcile()
        world.kubelet()
        seen.append(len(world.pods()))
        if len(world.pods()) == 10:
            break
    growth = [b - a for a, b in zip([0, *seen], seen, strict=False) if b != a]
    assert growth == [4, 4, 2], seen  # 5 Instances x 2 pods: 2 + 2 + 1 Instances
    assert all(len([n for n in world.pods() if n.startswith(f"chat-engine-{i}-")]) == 2 for i in range(5))


async def test_without_a_budget_every_missing_pod_is_created_in_one_pass() -> None:
    world = World()
    world.api.put(INFERENCE_REPLICAS, replica_body(replicas=5, workers=1))
    for _ in range(3):
        await world.reconcile()
        if world.pods():
            break
    assert len(world.pods()) == 10
