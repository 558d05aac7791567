"""Replica bounds (InferenceService, runtime, config defaults) and the config's documented errors."""

from __future__ import annotations

from typing import Any

import pytest

from ome.config import inferenceservice_config as cfg
from ome.config import pdb_config
from ome.devcluster.operator_config import CHART_PDB
from ome.resolution import autoscaling, modes
from ome.resolution.autoscaling import Bounds

Obj = dict[str, Any]


def _bounds(isvc: Obj, runtime: Obj | None = None, *, component: str = "engine", mode: str = modes.RAW_DEPLOYMENT,
            defaults: cfg.ReplicasDefaults | None = cfg.CHART_REPLICAS) -> Bounds:
    return autoscaling.replica_bounds(component=component, mode=mode, isvc_component=isvc,
                                      runtime_component=runtime or {}, defaults=defaults)


def test_chart_defaults_engine_and_decoder_1_to_3_router_1_to_2() -> None:
    assert _bounds({}) == Bounds(1, 3)
    assert _bounds({}, component="decoder") == Bounds(1, 3)
    assert _bounds({}, component="router") == Bounds(1, 2)


def test_each_bound_comes_from_the_first_place_that_sets_it() -> None:
    assert _bounds({"minReplicas": 2}, {"minReplicas": 4, "maxReplicas": 5}) == Bounds(2, 5)
    assert _bounds({}, {"maxReplicas": 2}) == Bounds(1, 2)


def test_min_zero_counts_as_set_and_max_zero_as_unset() -> None:
    assert _bounds({"minReplicas": 0, "maxReplicas": 0}) == Bounds(0, 3)


def test_a_default_max_below_min_is_raised() -> None:
    assert _bounds({"minReplicas": 5}) == Bounds(5, 5)


def test_config_defaults_are_used_and_null_removes_them() -> None:
    defaults = cfg.parse({"deploy": '{"defaultDeploymentMode": "RawDeployment", "replicas": '
                                    '{"defaultMinReplicas": 2, "defaultMaxReplicas": {"engine": 4, "router": null}}}'})
    replicas = defaults.deploy.replicas
    assert _bounds({}, defaults=replicas) == Bounds(2, 4)
    assert _bounds({}, component="router", defaults=replicas) == Bounds(2, 2)
    none = cfg.parse({"deploy": '{"defaultDeploymentMode": "RawDeployment", "replicas": null}'})
    assert none.deploy.replicas is None
    assert _bounds({}, defaults=None) == Bounds(1, 1)  # no bounds anywhere: one replica


def test_rawdeployment_min_above_explicit_max_is_an_error() -> None:
    with pytest.raises(autoscaling.AutoscalingError, match=r"^raw engine: minReplicas must not exceed maxReplicas: 3 > 2$"):
        _bounds({"minReplicas": 3}, {"maxReplicas": 2})


def test_omenative_min_above_explicit_max_raises_the_max() -> None:
    assert _bounds({"minReplicas": 3}, {"maxReplicas": 2}, mode=modes.OMENATIVE) == Bounds(3, 3)


@pytest.mark.parametrize(
    ("deploy", "message"),
    [
        ('{"defaultDeploymentMode": "RawDeployment", "replicas": {"defaultMinReplicas": 0}}',
         "invalid deploy config, replicas.defaultMinReplicas must be > 0, got 0"),
        ('{"defaultDeploymentMode": "RawDeployment", "replicas": {"defaultMaxReplicas": {"engine": -1}}}',
         "invalid deploy config, replicas.defaultMaxReplicas.engine must be > 0, got -1"),
    ],
)
def test_replica_default_errors(deploy: str, message: str) -> None:
    with pytest.raises(cfg.ConfigError) as caught:
        cfg.parse({"deploy": deploy})
    assert str(caught.value) == f"Failed to initialize deployment configuration: {message}"


def test_pdb_defaults_none_without_the_key_or_for_a_left_out_or_null_mode() -> None:
    # No key, as config/configmap ships it (a manifest install): no mode has a default.
    without = cfg.parse({}).pod_disruption_budget
    assert without == pdb_config.PDBConfig()
    assert without.for_mode("RawDeployment") is None and without.for_mode("OMENative") is None
    chart = cfg.parse({"podDisruptionBudget": '{"omeNative":{"maxUnavailable":1},"rawDeployment":{"maxUnavailable":1}}'})
    assert chart.pod_disruption_budget == CHART_PDB
    parsed = cfg.parse({"podDisruptionBudget": '{"omeNative": null, "rawDeployment": {"maxUnavailable": "25%"}}'})
    assert parsed.pod_disruption_budget.for_mode("RawDeployment") == pdb_config.PDBPolicy(maxUnavailable="25%")
    assert parsed.pod_disruption_budget.for_mode("OMENative") is None
    left_out = cfg.parse({"podDisruptionBudget": '{"rawDeployment": {"minAvailable": 1}}'})
    assert left_out.pod_disruption_budget.for_mode("OMENative") is None
    assert left_out.pod_disruption_budget.for_mode("MultiNode") is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('{"rawDeployment": {"minAvailable": "50%", "maxUnavailable": 1}}',
         "exactly one of podDisruptionBudget.rawDeployment.minAvailable or "
         "podDisruptionBudget.rawDeployment.maxUnavailable must be set"),
        ('{"omeNative": {}}',
         "exactly one of podDisruptionBudget.omeNative.minAvailable or "
         "podDisruptionBudget.omeNative.maxUnavailable must be set"),
        ('{"rawDeployment": {"maxUnavailable": "101%"}}',
         "podDisruptionBudget.rawDeployment.maxUnavailable must be a non-negative integer or a percentage "
         "from 0% to 100%"),
        ('{"rawDeployment": {"maxunavailable": 1}}', "unknown field podDisruptionBudget.rawDeployment.maxunavailable"),
    ],
    ids=["both", "neither", "bad-value", "case-sensitive-key"],
)
def test_pdb_config_errors(value: str, message: str) -> None:
    with pytest.raises(cfg.ConfigError) as caught:
        cfg.parse({"podDisruptionBudget": value})
    assert str(caught.value) == f"fails to create InferenceServicesConfig: {message}"


def test_autoscaler_policy_config_is_off_without_the_key() -> None:
    assert cfg.parse({}).autoscaler_policy is None
    on = cfg.parse({"autoscalerPolicy": '{"metricProviders": {"p": {"serverAddress": "http://x:9090"}}}'})
    assert on.autoscaler_policy is not None and on.autoscaler_policy.enabled
    off = cfg.parse({"autoscalerPolicy": '{"enabled": false}'})
    assert off.autoscaler_policy is not None and not off.autoscaler_policy.enabled
