"""Scale-up pod batching against guides/operate-ome/configure-pod-batching.md (v1.3)."""

from __future__ import annotations

from ome.cmd import wiring
from ome.config import inferenceservice_config as cfg
from ome.omenative.instances import PodCreate
from ome.omenative.pod_batching import admit_scale_up


def instance(index: int, pods: int) -> PodCreate:
    return PodCreate(index, 0, "rev", frozenset(f"i{index}-p{n}" for n in range(pods)))


def test_missing_pods_are_selected_by_whole_instances_within_the_budget() -> None:
    """`scaleUpPodBatchSize`: "Missing pods selected for creation during one pass over a component." ...
    "OME selects all the missing pods of an Instance together during scale-up" ... "Once the next Instance
    doesn't fit in a batch, later ones wait too." """
    admitted, deferred = admit_scale_up([instance(2, 3), instance(0, 3), instance(1, 3), instance(3, 1)], 8)
    assert [c.index for c in admitted] == [0, 1]
    assert [c.index for c in deferred] == [2, 3]  # index 3 would fit, but it waits behind index 2


def test_an_instance_larger_than_the_budget_proceeds_alone() -> None:
    """"If the first eligible Instance exceeds the entire budget, it proceeds alone. For example, a 16-pod
    Instance still progresses with a budget of 8; the budget doesn't split its gang." """
    admitted, deferred = admit_scale_up([instance(0, 16), instance(1, 1)], 8)
    assert [(c.index, len(c.names)) for c in admitted] == [(0, 16)]
    assert [c.index for c in deferred] == [1]


def test_an_omitted_budget_leaves_scale_up_unbounded() -> None:
    """"An omitted budget leaves that direction unbounded" """
    creates = [instance(i, 4) for i in range(50)]
    assert admit_scale_up(creates, None) == (creates, [])


def test_the_lifecycle_key_reaches_the_inferencereplica_controller() -> None:
    config = cfg.parse({"lifecycle": '{"scaleUpPodBatchSize": 32}'})
    settings = wiring.Settings(config, lws_served=False, config_namespace="ome").replica_settings()
    assert settings.scale_up_pod_batch_size == 32
    assert "scaleUpPodBatchSize" not in config.lifecycle.not_acted_on()
    assert wiring.Settings(cfg.parse({}), lws_served=False, config_namespace="ome").replica_settings() \
        .scale_up_pod_batch_size is None
