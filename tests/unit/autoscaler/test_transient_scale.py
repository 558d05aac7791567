"""Transient scale (migration-and-transient-scale.md §Transient scale, coverage row I8): a count written through
the InferenceReplica's scale subresource lasts until the autoscaler class's owner writes it again. The
InferenceService projection never writes `spec.replicas`; HPA / KEDA / External leave it to their autoscaler;
None sets it back to minReplicas. (A paused rollout holding a scale-up but not a scale-down is
tests/unit/omenative/test_instances_pause.py; the kwok e2e is tests/e2e/test_instance_migration.py.)"""

from __future__ import annotations

import pytest

from ome.api import resources as r
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.resolution import workloads
from ome.resolution.components import ModelSource, build_plans
from tests.unit.autoscaler.test_reconciler import REQ, World, _put_isvc, _reconciler, _workload
from tests.unit.autoscaler.test_reconciler import resolvers as resolvers  # noqa: F401  (autouse fixture)
from tests.unit.resolution import builders


def test_the_projected_replica_never_carries_a_count() -> None:
    isvc = builders.isvc(deploymentMode="OMENative", engine={"minReplicas": 2, "maxReplicas": 4})
    model = ModelSource.from_object("ClusterBaseModel", builders.model())
    config = InferenceServiceConfig()
    [plan] = build_plans(isvc, builders.runtime(), model, config, runtime_name="vllm-llama")
    [replica] = [o for o in workloads.render_component(isvc, plan, config, lws_served=False)
                 if o["kind"] == "InferenceReplica"]
    assert "replicas" not in replica["spec"]  # the service's next pass leaves a transient count alone


@pytest.mark.parametrize("engine", [
    {"minReplicas": 1, "maxReplicas": 4},  # HPA by default: the HorizontalPodAutoscaler writes it next
    {"minReplicas": 1, "maxReplicas": 4, "autoscaler": {"class": "External"}},
    {"minReplicas": 1, "maxReplicas": 4, "autoscaler": {"class": "KEDA", "keda": {"triggers": [
        {"type": "cpu", "metricType": "Utilization", "metadata": {"value": "80"}}]}}},
])
async def test_a_count_written_through_scale_lasts_under_an_autoscaler(engine: dict[str, object]) -> None:
    world = World()
    _put_isvc(world, deploymentMode="OMENative", engine=engine)
    _workload(world, r.INFERENCE_REPLICAS, 3)  # kubectl scale inferencereplica llama-engine --replicas=3
    reconciler = _reconciler(world)
    await reconciler.reconcile(REQ)
    await reconciler.reconcile(REQ)
    assert world.scaled == []
    assert world.get_or_none(r.INFERENCE_REPLICAS, "llama-engine", "demo")["spec"]["replicas"] == 3  # type: ignore[index]


async def test_under_none_ome_owns_the_count_and_sets_it_back_to_min_replicas() -> None:
    world = World()
    _put_isvc(world, deploymentMode="OMENative", engine={"minReplicas": 2, "autoscaler": {"class": "None"}})
    _workload(world, r.INFERENCE_REPLICAS, 5)
    await _reconciler(world).reconcile(REQ)
    assert world.scaled == [("InferenceReplica", "llama-engine", 2)]
