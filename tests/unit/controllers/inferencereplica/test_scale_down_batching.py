"""lifecycle.scaleDownPodBatchSize and scaleDownRequeueInterval in the InferenceReplica reconciler
(configure-pod-batching.md): a scale-down drains and deletes whole Instances in waves within the pod
budget, logs `OMENative scale-down wave` and feeds the documented series."""

from __future__ import annotations

from typing import Any

from prometheus_client import REGISTRY
from structlog.testing import capture_logs

from ome.api.resources import INFERENCE_REPLICAS
from ome.omenative import instance_names as names
from tests.unit.controllers.inferencereplica.world import World
from tests.unit.omenative.builders import replica as replica_body


def sample(name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


async def scaled_down(world: World, replicas: int) -> None:
    world.api.put(INFERENCE_REPLICAS, replica_body(replicas=6, workers=1))
    await world.settle(8)
    assert len(world.pods()) == 12
    world.api.put(INFERENCE_REPLICAS, {**world.replica(), "spec": {**world.replica()["spec"],  # type: ignore[index]
                                                                  "replicas": replicas}})


def deleting(world: World) -> set[int]:
    rows = (world.replica() or {})["status"]["instanceStatuses"]
    return {r["index"] for r in rows if r["phase"] == "Deleting"}


def indices(world: World) -> set[int]:
    return {int(p["metadata"]["labels"][names.INSTANCE_INDEX_LABEL]) for p in world.pods().values()}


async def test_a_scale_down_deletes_whole_instances_in_waves_within_the_budget() -> None:
    """Budget 4, Instances of a leader + 1 worker, 6 -> 1: two Instances per wave, highest index first, and
    the next wave only once the running one is gone."""
    world = World(scale_down_pod_batch_size=4)
    await scaled_down(world, 1)
    seen: list[set[int]] = []
    logs: list[dict[str, Any]] = []
    for _ in range(30):
        with capture_logs() as captured:
            await world.reconcile()
        logs += [e for e in captured if e["event"] == "OMENative scale-down wave"]
        world.kubelet()
        seen.append(deleting(world))
        assert len(deleting(world)) <= 2
        if indices(world) == {0} and not deleting(world):
            break
    assert indices(world) == {0} and not deleting(world)
    waves = [s for i, s in enumerate(seen) if s and (i == 0 or s != seen[i - 1])]
    assert waves[:3] == [{5, 4}, {3, 2}, {1}], seen
    first = logs[0]
    assert (first["namespace"], first["isvc"], first["component"]) == ("ns", "chat", "engine")
    assert {k: first[k] for k in ("podBudget", "activePodCost", "activeInstances", "admittedInstances",
                                  "deferredInstances")} == {"podBudget": 4, "activePodCost": 4,
                                                            "activeInstances": 2, "admittedInstances": 2,
                                                            "deferredInstances": 3}
    await world.reconcile()  # the pass after the last row went (its status write's event brings it)
    ident = {"namespace": "ns", "isvc": "chat", "component": "engine"}
    assert sample("ome_omenative_scale_down_active_pods", **ident) == 0  # reset once done
    assert sample("ome_omenative_scale_down_deferred_instances", **ident) == 0


async def test_the_series_follow_a_wave_in_progress() -> None:
    world = World(scale_down_pod_batch_size=4)
    await scaled_down(world, 1)
    before = sample("ome_omenative_scale_down_batch_pods_count", component="engine") or 0.0
    await world.reconcile()
    ident = {"namespace": "ns", "isvc": "chat", "component": "engine"}
    assert sample("ome_omenative_scale_down_active_pods", **ident) == 4
    assert sample("ome_omenative_scale_down_deferred_instances", **ident) == 3
    assert sample("ome_omenative_scale_down_batch_pods_count", component="engine") == before + 1


async def test_an_instance_larger_than_the_budget_is_an_oversized_wave() -> None:
    world = World(scale_down_pod_batch_size=1)
    await scaled_down(world, 5)
    before = sample("ome_omenative_scale_down_oversized_batch_total", component="engine") or 0.0
    await world.reconcile()
    assert deleting(world) == {5}
    assert sample("ome_omenative_scale_down_oversized_batch_total", component="engine") == before + 1


async def test_the_requeue_interval_is_the_fallback_wake_while_work_remains() -> None:
    world = World(scale_down_pod_batch_size=4, scale_down_requeue_interval=5.0)
    await scaled_down(world, 1)
    result = await world.reconcile()
    assert result.requeue_after == 5.0


async def test_without_a_budget_every_extra_starts_deleting_at_once() -> None:
    world = World()
    await scaled_down(world, 1)
    await world.reconcile()
    assert deleting(world) == {1, 2, 3, 4, 5}
