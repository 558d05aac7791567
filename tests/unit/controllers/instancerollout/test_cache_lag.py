"""The Instance rollout reconciler makes no pod write from a replica older than this process's own last
write of it (see ome/framework/written.py): the InferenceReplica reconciler writes the same status."""

from __future__ import annotations

from ome.api.resources import INFERENCE_REPLICAS
from ome.framework.written import CACHE_LAG_REQUEUE
from tests.unit.controllers.inferencereplica.world import World
from tests.unit.controllers.instancerollout.test_reconciler import REQ, change_image, rollout
from tests.unit.omenative.builders import replica as replica_body


async def test_a_rollout_waits_for_the_cache_to_show_our_last_replica_write() -> None:
    world = World()
    world.api.put(INFERENCE_REPLICAS, replica_body(replicas=1, lifecycle={"updateStrategy": {"type": "SurgeThenDrain"}}))
    await world.settle()
    mover = rollout(world)
    change_image(world, "vllm:new")
    await world.reconcile()  # the replica controller records the update revision
    meta = (world.replica() or {})["metadata"]
    world.client.written.record(INFERENCE_REPLICAS, {"metadata": {"uid": meta["uid"],
                                              "resourceVersion": str(int(meta["resourceVersion"]) + 1)}})
    world.api.writes.clear()

    result = await mover.reconcile(REQ)
    assert world.api.writes == [] and result.requeue_after == CACHE_LAG_REQUEUE

    world.api.objects[("inferencereplicas", "ns", "chat-engine")]["metadata"]["resourceVersion"] = str(
        int(meta["resourceVersion"]) + 1)
    await mover.reconcile(REQ)
    assert [w for w in world.api.writes if w[1] == "Pod"], "the surge starts once the cache caught up"
