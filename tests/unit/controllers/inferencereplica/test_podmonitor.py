"""A PodMonitor per InferenceReplica, only when the CRD was served at manager start."""

from __future__ import annotations

from ome.api.resources import INFERENCE_REPLICAS
from ome.omenative.podmonitor import POD_MONITORS
from tests.unit.controllers.inferencereplica.world import World
from tests.unit.omenative.builders import replica


async def test_pod_monitor_when_the_crd_was_served() -> None:
    world = World(pod_monitor_served=True)
    world.api.put(INFERENCE_REPLICAS, replica())
    await world.settle()
    (pm,) = world.api.of(POD_MONITORS)
    assert pm["metadata"]["name"] == "chat-engine"
    assert pm["spec"]["podMetricsEndpoints"] == [{"port": "http", "path": "/metrics"}]
    world.api.writes.clear()
    await world.reconcile()
    assert world.api.writes == []


async def test_pod_monitor_drift_is_put_back() -> None:
    world = World(pod_monitor_served=True)
    world.api.put(INFERENCE_REPLICAS, replica())
    await world.settle()
    (pm,) = world.api.of(POD_MONITORS)
    pm["spec"]["podMetricsEndpoints"] = []
    await world.reconcile()
    assert world.api.writes_of("apply") == [("apply", "PodMonitor", "chat-engine")]
    assert world.api.of(POD_MONITORS)[0]["spec"]["podMetricsEndpoints"][0]["port"] == "http"


async def test_no_pod_monitor_without_the_crd() -> None:
    world = World()
    world.api.put(INFERENCE_REPLICAS, replica())
    await world.settle()
    assert world.api.of(POD_MONITORS) == []
