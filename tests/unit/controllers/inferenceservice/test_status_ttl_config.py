"""Pure pieces: status conditions, TTL arithmetic, the desired-hash check, the ConfigMap parser."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from ome.config import inferenceservice_config as cfg
from ome.controllers.inferenceservice import converge, status, ttl
from ome.resolution import modes
from ome.resolution.components import build_plans
from tests.unit.resolution import builders

Obj = dict[str, Any]
CONFIG = cfg.InferenceServiceConfig()
NOW = "2026-01-01T00:10:00Z"


def _plan(isvc: Obj) -> Any:
    return build_plans(isvc, builders.runtime(), None, CONFIG)[0]


def _replica(replicas: int, ready: int, serving: int, max_unavailable: Any = None) -> Obj:
    spec: Obj = {"replicas": replicas}
    if max_unavailable is not None:
        spec["lifecycle"] = {"updateStrategy": {"rollingUpdate": {"maxUnavailable": max_unavailable}}}
    return {"spec": spec, "status": {"replicas": replicas, "readyReplicas": ready, "servingReplicas": serving}}


@pytest.mark.parametrize(
    ("replica", "expected"),
    [
        (_replica(2, 2, 2), ("True", "Ready", "All Instances are Ready")),
        (_replica(4, 3, 3, 1), ("True", "MinimumAvailable", "3/4 Instances serving (min 3)")),
        (_replica(4, 2, 2, 1), ("False", "InsufficientAvailable", "2/4 Instances serving, need 3")),
        (_replica(0, 0, 0), ("False", "NoReplicas", "Component has no desired Instances")),
        (_replica(4, 2, 2, "50%"), ("True", "MinimumAvailable", "2/4 Instances serving (min 2)")),
    ],
    ids=["ready", "minimum", "insufficient", "no-replicas", "percent"],
)
def test_omenative_component_condition(replica: Obj, expected: tuple[str, str, str]) -> None:
    plan = _plan(builders.isvc(deploymentMode="OMENative"))
    cond = status.workload_condition(plan, replica)
    assert (cond.type, cond.status, cond.reason, cond.message) == ("EngineReady", *expected)


def test_missing_workload_is_initializing() -> None:
    cond = status.workload_condition(_plan(builders.isvc()), None)
    assert (cond.status, cond.reason, cond.message) == (
        "False",
        "Initializing",
        "engine component initializing",
    )


def test_ready_needs_engine_and_ingress_but_not_router() -> None:
    isvc = builders.isvc(router={})
    plans = build_plans(isvc, builders.runtime(), None, CONFIG)
    available = {"status": {"conditions": [{"type": "Available", "status": "True", "reason": "R"}]}}
    observed = status.Observed(
        plans=plans, workloads={"engine": available, "router": None}, runtime_name="rt"
    )
    computed = status.compute(isvc, observed, CONFIG, NOW)
    by_type = {c["type"]: c for c in computed["conditions"]}
    assert by_type["Ready"]["status"] == "True"
    assert by_type["RouterReady"]["status"] == "False"
    assert by_type["IngressReady"]["message"] == status.INGRESS_DISABLED_MESSAGE


def test_transition_time_moves_only_with_status() -> None:
    isvc = builders.isvc()
    isvc["status"] = {
        "conditions": [
            {"type": "IngressReady", "status": "True", "lastTransitionTime": "then"},
            {"type": "Ready", "status": "True", "lastTransitionTime": "then"},
        ]
    }
    observed = status.Observed(plans=[_plan(isvc)], runtime_name="rt")
    by_type = {c["type"]: c for c in status.compute(isvc, observed, CONFIG, NOW)["conditions"]}
    assert by_type["IngressReady"]["lastTransitionTime"] == "then"
    assert by_type["Ready"]["lastTransitionTime"] == NOW  # went False


def test_differs_ignores_fields_of_other_controllers() -> None:
    old = {"components": {"engine": {"url": "u", "canary": {"phase": "Paused"}}}, "rollout": {"x": 1}}
    assert not status.differs(old, {"components": {"engine": {"url": "u"}}})
    assert status.differs(old, {"components": {"engine": {}}})
    assert status.differs(old, {"components": {"engine": {"url": "u", "lifecycle": {"replicas": 1}}}})


def test_differs_sees_the_autoscaler_entries_this_controller_writes_for_the_autoscaler() -> None:
    old = {"components": {"engine": {"url": "u", "autoscaler": {"class": "HPA"}}}}
    assert not status.differs(old, {"components": {"engine": {"url": "u", "autoscaler": {"class": "HPA"}}}})
    assert status.differs(old, {"components": {"engine": {"url": "u", "autoscaler": {"class": "KEDA"}}}})
    assert status.differs(old, {"components": {"engine": {"url": "u"}}})


def test_virtual_status_url_uses_cluster_domain() -> None:
    isvc = builders.isvc(annotations={modes.ANNOTATION: "VirtualDeployment"})
    config = cfg.parse({"clusterDomain": "corp.local"})
    computed = status.virtual_status(isvc, config, NOW)
    assert computed["url"] == "http://llama.demo.svc.corp.local"
    assert computed["conditions"] == [
        {
            "type": "Ready",
            "status": "True",
            "lastTransitionTime": NOW,
            "reason": "VirtualDeployment",
            "message": "InferenceService is in VirtualDeployment mode",
        }
    ]


@pytest.mark.parametrize(
    ("seconds", "expired", "remaining"), [(60, True, -540), (600, True, 0), (900, False, 300)]
)
def test_ttl_counts_from_creation(seconds: int, expired: bool, remaining: float) -> None:
    state = ttl.check(builders.isvc(ttlSecondsAfterCreation=seconds), datetime(2026, 1, 1, 0, 10, tzinfo=UTC))
    assert state is not None and (state.expired, state.remaining) == (expired, remaining)


def test_no_ttl_no_deadline() -> None:
    assert ttl.check(builders.isvc(), datetime.now(UTC)) is None
    assert ttl.message(86400) == "Deleted because ttlSecondsAfterCreation=86400 has passed"


def test_desired_hash_detects_change_and_removal() -> None:
    desired = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a", "labels": {"x": "1"}}}
    cached = converge.stamp(dict(desired, metadata=dict(desired["metadata"])))
    assert converge.up_to_date(
        converge.stamp({**desired, "metadata": {"name": "a", "labels": {"x": "1"}}}), cached
    )
    assert not converge.up_to_date(
        converge.stamp({**desired, "metadata": {"name": "a", "labels": {}}}), cached
    )
    assert not converge.up_to_date(cached, None)


# --- inferenceservice-config ---------------------------------------------------------------------------


def test_missing_keys_take_chart_defaults() -> None:
    config = cfg.parse({})
    assert config.deploy.default_deployment_mode == "RawDeployment"
    assert config.deploy.termination_grace_period_seconds == 600
    assert config.ingress.disable_ingress_creation is True
    assert config.lifecycle.instance_ready_timeout == "30m"
    assert config.lifecycle.update_retry is not None and config.lifecycle.update_retry.max_attempts == 3
    # Not the chart's 10: with no limit set anywhere, OME keeps every revision (the docs).
    assert config.lifecycle.revision_history_limit is None
    assert config.omenative_status.status_encoding == "ColumnarV2"
    engine = config.deploy.update_strategy.for_component("engine")
    assert engine is not None and (engine.type, engine.max_surge, engine.max_unavailable) == (
        "SurgeThenDrain",
        "25%",
        "25%",
    )
    assert config.cluster_domain == "cluster.local"


@pytest.mark.parametrize(
    "deploy",
    ['{"defaultDeploymentMode": "Serverless"}', '{"defaultDeploymentMode": "OMENative"}',
     '{"defaultDeploymentMode": ""}', '{"terminationGracePeriodSeconds": 0}', "not json"],
)  # fmt: skip
def test_bad_deploy_entry_fails_manager_start(deploy: str) -> None:
    with pytest.raises(cfg.ConfigError, match="^Failed to initialize deployment configuration: "):
        cfg.parse({"deploy": deploy})


def test_errors_name_the_key_and_field() -> None:
    with pytest.raises(cfg.ConfigError, match=r"lifecycle\.updateRetry\.maxAttempts"):
        cfg.parse({"lifecycle": '{"updateRetry": {"maxAttempts": 0}}'})
    with pytest.raises(cfg.ConfigError, match=r"maxSurge: must be > 0"):
        cfg.parse({"deploy": '{"updateStrategy": {"engine": {"maxSurge": "0%"}}}'})


def test_unknown_fields_are_kept() -> None:
    config = cfg.parse({"ingress": '{"enableGatewayAPI": true, "localGateway": "knative-serving/local"}'})
    assert config.ingress.enable_gateway_api is True
    assert config.ingress.model_extra == {"localGateway": "knative-serving/local"}


def test_namespace_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    assert cfg.config_namespace() == "ome"
    monkeypatch.setenv("POD_NAMESPACE", "ome-system")
    assert cfg.config_namespace() == "ome-system"
