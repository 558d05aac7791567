"""Rendering of the HPA, the KEDA ScaledObject and the PodDisruptionBudget (with OMENative's arithmetic)."""

from __future__ import annotations

from typing import Any

import pytest

from ome.config import pdb_config
from ome.devcluster.operator_config import CHART_PDB
from ome.resolution import autoscaler_objects as scalers
from ome.resolution import autoscaling, disruption, modes
from ome.resolution.autoscaling import Bounds
from ome.resolution.disruption import Budget

Obj = dict[str, Any]

ISVC: Obj = {"metadata": {"name": "chat", "namespace": "prod", "uid": "u1"}}
TRIGGER: Obj = {"type": "cron", "metadata": {"timezone": "UTC", "start": "0 9 * * *", "end": "0 17 * * *",
                                             "desiredReplicas": "1"}}


def _target(mode: str = modes.RAW_DEPLOYMENT, bounds: Bounds = Bounds(1, 3)) -> scalers.Target:
    return scalers.Target(ISVC, "engine", mode, bounds, {"component": "engine"}, {"team": "a"})


def test_default_hpa_cpu_80_targets_the_deployment() -> None:
    hpa = scalers.render(_target(), {"class": "HPA"})
    assert hpa is not None and hpa["metadata"]["name"] == "chat-engine"
    assert hpa["spec"] == {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "chat-engine"},
        "minReplicas": 1,
        "maxReplicas": 3,
        "metrics": [autoscaling.cpu_metric(80)],
    }
    assert hpa["metadata"]["annotations"]["team"] == "a"
    assert hpa["metadata"]["ownerReferences"][0]["uid"] == "u1"


def test_omenative_hpa_targets_the_inferencereplica() -> None:
    hpa = scalers.render(_target(modes.OMENATIVE), {"class": "HPA"})
    assert hpa is not None
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "ome.io/v1beta1", "kind": "InferenceReplica",
                                             "name": "chat-engine"}


def test_hpa_metrics_and_behavior_are_copied_as_they_are() -> None:
    metrics = [{"type": "Pods", "pods": {"metric": {"name": "q"}, "target": {"type": "AverageValue",
                                                                           "averageValue": "5"}}}]
    behavior = {"scaleDown": {"stabilizationWindowSeconds": 300}}
    hpa = scalers.render(_target(), {"class": "HPA", "hpa": {"metrics": metrics, "behavior": behavior}})
    assert hpa is not None and hpa["spec"]["metrics"] == metrics and hpa["spec"]["behavior"] == behavior


def test_scaled_object_copies_the_keda_fields() -> None:
    keda = {"triggers": [TRIGGER], "pollingInterval": 15, "cooldownPeriod": 300, "idleReplicaCount": 0,
            "fallback": {"failureThreshold": 3, "replicas": 4},
            "advanced": {"horizontalPodAutoscalerConfig": {"name": "keda-hpa-chat"}}}
    so = scalers.render(_target(bounds=Bounds(2, 4)), {"class": "KEDA", "keda": keda})
    assert so is not None and so["metadata"]["name"] == "scaledobject-chat-engine"
    assert so["apiVersion"] == "keda.sh/v1alpha1"
    assert so["spec"] == {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "chat-engine"},
        "minReplicaCount": 2, "maxReplicaCount": 4, "triggers": [TRIGGER], "pollingInterval": 15,
        "cooldownPeriod": 300, "idleReplicaCount": 0, "fallback": {"failureThreshold": 3, "replicas": 4},
        "advanced": {"horizontalPodAutoscalerConfig": {"name": "keda-hpa-chat"}},
    }


def test_rawdeployment_scales_to_zero_but_omenative_keeps_one_instance() -> None:
    block = {"class": "KEDA", "keda": {"triggers": [TRIGGER]}}
    raw = scalers.render(_target(bounds=Bounds(0, 2)), block)
    native = scalers.render(_target(modes.OMENATIVE, Bounds(0, 2)), block)
    assert raw is not None and raw["spec"]["minReplicaCount"] == 0
    assert native is not None and native["spec"]["minReplicaCount"] == 1


@pytest.mark.parametrize(
    ("bounds", "message"),
    [(Bounds(1, 2), "KEDA autoscaler requires at least one trigger"),
     (Bounds(0, 2), "minReplicas=0 requires typed KEDA with at least one trigger")],
)
def test_keda_without_triggers_is_an_error(bounds: Bounds, message: str) -> None:
    with pytest.raises(autoscaling.AutoscalingError, match=f"^{message}$"):
        scalers.render(_target(bounds=bounds), {"class": "KEDA"})


def test_keda_hpa_name_must_differ_from_the_component() -> None:
    keda = {"triggers": [TRIGGER], "advanced": {"horizontalPodAutoscalerConfig": {"name": "chat-engine"}}}
    with pytest.raises(autoscaling.AutoscalingError, match="must differ from 'chat-engine'"):
        scalers.render(_target(), {"class": "KEDA", "keda": keda})


@pytest.mark.parametrize("klass", ["External", "None"])
def test_external_and_none_create_nothing(klass: str) -> None:
    assert scalers.render(_target(), {"class": klass}) is None


def test_multinode_creates_no_autoscaler() -> None:
    assert scalers.render(_target(modes.MULTINODE), {"class": "HPA"}) is None
    assert scalers.scale_target_ref(modes.MULTINODE, "x") is None


def test_last_rendered_block_round_trips() -> None:
    hpa = scalers.render(_target(), {"class": "HPA"}, policy="cpu-60")
    assert scalers.last_rendered(hpa) == ({"class": "HPA"}, "cpu-60")
    assert scalers.last_rendered({"metadata": {}}) is None


# -- PodDisruptionBudget ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("budget", "expected"),
    [(Budget("minAvailable", 2), 2), (Budget("minAvailable", "90%"), 11), (Budget("maxUnavailable", 1), 11),
     (Budget("maxUnavailable", "25%"), 9)],
    ids=["min-2", "min-90%", "max-1", "max-25%"],
)
def test_omenative_counts_pods_four_instances_of_three(budget: Budget, expected: int) -> None:
    assert disruption.pods_min_available(budget, instances=4, pods_per_instance=3) == expected


def test_omenative_percentages_round_up() -> None:
    assert disruption.pods_min_available(Budget("minAvailable", "50%"), 3, 1) == 2
    assert disruption.pods_min_available(Budget("maxUnavailable", "10%"), 3, 1) == 2


def test_component_budget_overrides_runtime_field_and_mode_default() -> None:
    defaults = CHART_PDB
    assert disruption.resolve_budget("engine", modes.RAW_DEPLOYMENT, {"minAvailable": "50%"},
                                     {"minAvailable": 1}, defaults) == Budget("minAvailable", "50%")
    assert disruption.resolve_budget("engine", modes.RAW_DEPLOYMENT, {}, {"maxUnavailable": 2},
                                     defaults) == Budget("maxUnavailable", 2)
    assert disruption.resolve_budget("engine", modes.OMENATIVE, {}, {}, defaults) == Budget("maxUnavailable", 1)
    assert disruption.resolve_budget("engine", modes.MULTINODE, {"minAvailable": 1}, {}, defaults) is None
    no_default = pdb_config.PDBConfig()
    assert disruption.resolve_budget("engine", modes.RAW_DEPLOYMENT, {}, {}, no_default) is None


def test_runtime_and_isvc_setting_different_fields_is_a_resolve_error() -> None:
    with pytest.raises(disruption.BudgetError, match="^failed to resolve decoder PodDisruptionBudget"):
        disruption.resolve_budget("decoder", modes.RAW_DEPLOYMENT, {"minAvailable": 1}, {"maxUnavailable": 1},
                                  CHART_PDB)
    with pytest.raises(disruption.BudgetError, match="^failed to resolve engine PodDisruptionBudget"):
        disruption.resolve_budget("engine", modes.RAW_DEPLOYMENT, {}, {"maxUnavailable": "150%"}, CHART_PDB)


def test_pdb_render_per_mode() -> None:
    raw = disruption.render(ISVC, component="engine", mode=modes.RAW_DEPLOYMENT, budget=Budget("minAvailable", "50%"),
                            labels={}, annotations={}, selector={"app": "chat-engine"})
    assert raw["spec"] == {"minAvailable": "50%", "selector": {"matchLabels": {"app": "chat-engine"}}}
    native = disruption.render(ISVC, component="engine", mode=modes.OMENATIVE, budget=Budget("maxUnavailable", 1),
                               labels={}, annotations={}, selector={"s": "x"}, instances=4, pods_per_instance=3)
    assert native["spec"] == {"minAvailable": 11, "selector": {"matchLabels": {"s": "x"}}}


def test_preflight_rejects_a_budget_ome_did_not_create() -> None:
    stranger = {"metadata": {"name": "chat-engine", "namespace": "prod", "ownerReferences": []}}
    message = disruption.preflight_error("engine", stranger, ISVC)
    assert message is not None and message.startswith("failed to preflight engine PodDisruptionBudget")
    ours = {"metadata": {"ownerReferences": [{"uid": "u1", "controller": True}]}}
    assert disruption.preflight_error("engine", ours, ISVC) is None
