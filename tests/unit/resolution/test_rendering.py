"""Rendering per mode: RawDeployment objects, OMENative InferenceReplica, MultiNode LeaderWorkerSet."""

from __future__ import annotations

from typing import Any

import pytest

from ome.config.inferenceservice_config import InferenceServiceConfig, parse
from ome.controllers.autoscaler import decide as autoscaler_decide
from ome.devcluster.operator_config import CHART_PDB
from ome.resolution import modes, naming, objects, workloads
from ome.resolution.components import RUNTIME_CONFIG_KEYS, ComponentPlan, ModelSource, build_plans
from tests.unit.resolution import builders

Obj = dict[str, Any]
# The chart's settings: with its default budgets (each mode maxUnavailable: 1), as the docs' objects are.
CONFIG = InferenceServiceConfig(podDisruptionBudget=CHART_PDB)
MODEL = ModelSource.from_object("ClusterBaseModel", builders.model())


def _plans(isvc: Obj, runtime: Obj | None = None) -> list[ComponentPlan]:
    return build_plans(isvc, runtime or builders.runtime(), MODEL, CONFIG, runtime_name="vllm-llama")


def _render(isvc: Obj, *, lws: bool = False, config: InferenceServiceConfig = CONFIG) -> dict[tuple[str, str], Obj]:
    """The workload (InferenceService controller) and the autoscaler and budget (autoscaler controller)."""
    out = {}
    runtime_spec = builders.runtime()["spec"]
    for plan in _plans(isvc):
        rendered = workloads.render_component(isvc, plan, config, lws_served=lws)
        runtime_component = runtime_spec.get(RUNTIME_CONFIG_KEYS[plan.component]) or {}
        rendered += autoscaler_decide.desired_objects(isvc, plan, runtime_component, config)
        for obj in rendered:
            out[(obj["kind"], obj["metadata"]["name"])] = obj
    return out


def test_minimal_isvc_renders_exactly_the_documented_objects() -> None:
    rendered = _render(builders.isvc(name="llama-3-2-1b-instruct"))
    assert sorted(rendered) == [
        ("Deployment", "llama-3-2-1b-instruct-engine"),
        ("HorizontalPodAutoscaler", "llama-3-2-1b-instruct-engine"),
        ("PodDisruptionBudget", "llama-3-2-1b-instruct-engine"),
        ("Service", "llama-3-2-1b-instruct-engine"),
    ]


def test_hpa_defaults_cpu_80_and_1_to_3() -> None:
    hpa = _render(builders.isvc())[("HorizontalPodAutoscaler", "llama-engine")]
    assert hpa["spec"]["minReplicas"] == 1 and hpa["spec"]["maxReplicas"] == 3
    assert hpa["spec"]["metrics"] == [
        {
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
        }
    ]
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "llama-engine",
    }


def test_hpa_follows_component_replicas() -> None:
    hpa = _render(builders.isvc(engine={"minReplicas": 2, "maxReplicas": 5}))[
        ("HorizontalPodAutoscaler", "llama-engine")
    ]
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 5)


@pytest.mark.parametrize(
    ("engine", "budget"),
    [({}, {"maxUnavailable": 1}), ({"minAvailable": 2}, {"minAvailable": 2}),
     ({"maxUnavailable": "50%"}, {"maxUnavailable": "50%"})],
    ids=["default", "min-available", "max-unavailable"],
)  # fmt: skip
def test_pdb_budget(engine: Obj, budget: Obj) -> None:
    pdb = _render(builders.isvc(engine=engine))[("PodDisruptionBudget", "llama-engine")]
    assert {k: v for k, v in pdb["spec"].items() if k != "selector"} == budget
    assert pdb["spec"]["selector"] == {"matchLabels": {"app": "llama-engine"}}


@pytest.mark.parametrize("mode", [modes.RAW_DEPLOYMENT, modes.OMENATIVE])
def test_without_the_key_only_a_component_that_sets_a_budget_gets_one(mode: str) -> None:
    """A manifest install: config/configmap has no podDisruptionBudget key, so no mode has a default."""
    manifests = parse({})
    assert ("PodDisruptionBudget", "llama-engine") not in _render(builders.isvc(deploymentMode=mode),
                                                                  config=manifests)
    rendered = _render(builders.isvc(deploymentMode=mode, engine={"minAvailable": 1}), config=manifests)
    assert rendered[("PodDisruptionBudget", "llama-engine")]["spec"]["minAvailable"] == 1


def test_a_key_with_only_raw_deployment_gives_omenative_components_no_budget() -> None:
    raw_only = parse({"podDisruptionBudget": '{"rawDeployment": {"maxUnavailable": "25%"}}'})
    native = _render(builders.isvc(deploymentMode=modes.OMENATIVE), config=raw_only)
    assert ("InferenceReplica", "llama-engine") in native
    assert ("PodDisruptionBudget", "llama-engine") not in native
    raw = _render(builders.isvc(), config=raw_only)[("PodDisruptionBudget", "llama-engine")]
    assert raw["spec"]["maxUnavailable"] == "25%"


def test_deployment_labels_selector_owner_and_replicas_left_to_hpa() -> None:
    dep = _render(builders.isvc())[("Deployment", "llama-engine")]
    assert dep["metadata"]["labels"]["serving-runtime"] == "vllm-llama"
    assert dep["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "ome.io/v1beta1",
            "kind": "InferenceService",
            "name": "llama",
            "uid": "uid-llama",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert dep["spec"]["selector"] == {"matchLabels": {"app": "llama-engine"}}
    assert dep["spec"]["template"]["metadata"]["labels"]["app"] == "llama-engine"
    assert dep["spec"]["template"]["metadata"]["labels"]["component"] == "engine"
    assert "replicas" not in dep["spec"]


def test_autoscaler_none_drops_hpa_and_leaves_the_count_to_the_autoscaler_controller() -> None:
    rendered = _render(builders.isvc(engine={"minReplicas": 2, "autoscaler": {"class": "None"}}))
    assert "replicas" not in rendered[("Deployment", "llama-engine")]["spec"]
    assert ("HorizontalPodAutoscaler", "llama-engine") not in rendered


def test_service_ports_from_runner_or_8080() -> None:
    svc = _render(builders.isvc())[("Service", "llama-engine")]
    assert svc["spec"]["ports"] == [{"name": "http1", "port": 8080, "targetPort": 8080, "protocol": "TCP"}]
    assert svc["spec"]["type"] == "ClusterIP"
    no_ports = builders.runtime(engine_config={"runner": {"name": "ome-container", "image": "x"}})
    [plan] = _plans(builders.isvc(), no_ports)
    assert objects.service_ports(plan.pod_spec) == [
        {"name": "ome-container", "port": 8080, "targetPort": 8080, "protocol": "TCP"}
    ]


def test_external_service_fronts_router_else_engine() -> None:
    isvc = builders.isvc(router={"runner": {"image": "r", "ports": [{"containerPort": 9000}]}})
    plans = _plans(isvc)
    target = workloads.external_target(plans)
    assert target is not None and target.component == "router"
    svc = objects.external_service(isvc, target)
    assert svc["metadata"]["name"] == "llama"
    assert svc["metadata"]["labels"] == {"ome.io/inferenceservice": "llama", "component": "external-service"}
    assert svc["spec"]["selector"] == {"ome.io/inferenceservice": "llama", "component": "router"}
    assert svc["spec"]["ports"] == [{"name": "http", "port": 9000, "targetPort": 9000, "protocol": "TCP"}]
    engine_only = workloads.external_target(_plans(builders.isvc()))
    assert engine_only is not None and engine_only.component == "engine"


def test_engine_and_router_keep_router_on_a_deployment_under_omenative_spec() -> None:
    isvc = builders.isvc(
        deploymentMode="OMENative", router={"annotations": {modes.ANNOTATION: "RawDeployment"}}
    )
    rendered = _render(isvc)
    assert ("InferenceReplica", "llama-engine") in rendered
    assert ("Deployment", "llama-router") in rendered
    assert ("Deployment", "llama-engine") not in rendered


def test_omenative_replica_spec() -> None:
    isvc = builders.isvc(
        engine={"annotations": {modes.ANNOTATION: "OMENative"}, "minReplicas": 1, "maxReplicas": 1}
    )
    rendered = _render(isvc)
    irep = rendered[("InferenceReplica", "llama-engine")]
    spec = irep["spec"]
    assert spec["parentRef"] == {"name": "llama"} and spec["component"] == "engine"
    [runner] = spec["runners"]
    assert runner["name"] == "default" and runner["size"] == 1
    assert runner["template"]["spec"]["nodeSelector"] == {
        "models.ome.io/clusterbasemodel.llama-3-2-1b-instruct": "Ready"
    }
    assert spec["lifecycle"]["updateStrategy"] == {
        "type": "SurgeThenDrain",
        "rollingUpdate": {"maxSurge": "25%"},
    }
    svc = rendered[("Service", "llama-engine")]
    assert svc["spec"]["selector"] == {
        "ome.io/inferenceservice": "llama",
        "component": "engine",
        "ome.io/managed-by": "OMENative",
    }
    assert (
        rendered[("HorizontalPodAutoscaler", "llama-engine")]["spec"]["scaleTargetRef"]["kind"]
        == "InferenceReplica"
    )
    assert ("PodDisruptionBudget", "llama-engine") in rendered


def test_omenative_leader_worker_runners() -> None:
    isvc = builders.isvc(engine={"leader": {}, "worker": {"size": 3}})
    spec = _render(isvc)[("InferenceReplica", "llama-engine")]["spec"]
    assert [(r["name"], r["size"]) for r in spec["runners"]] == [("leader", 1), ("worker", 3)]


def test_component_lifecycle_wins_over_config_defaults() -> None:
    lifecycle = {"updateStrategy": {"type": "RecreatePod"}}
    isvc = builders.isvc(deploymentMode="OMENative", engine={"lifecycle": lifecycle})
    spec = _render(isvc)[("InferenceReplica", "llama-engine")]["spec"]
    # Filled field by field: the type stays, and only the budget it reads comes from the operator default.
    assert spec["lifecycle"] == {
        "updateStrategy": {"type": "RecreatePod", "rollingUpdate": {"maxUnavailable": "25%"}}
    }


def _replica_and_scaler(isvc: Obj, engine_config: Obj) -> tuple[Obj, Obj | None]:
    """The engine's InferenceReplica and the HPA the autoscaler controller runs for it, with the default
    runtime's engineConfig extended by `engine_config`."""
    runtime = builders.runtime()
    runtime["spec"]["engineConfig"].update(engine_config)
    [plan] = _plans(isvc, runtime)
    rendered = workloads.render_component(isvc, plan, CONFIG, lws_served=False)
    rendered += autoscaler_decide.desired_objects(isvc, plan, runtime["spec"]["engineConfig"], CONFIG)
    by_kind = {obj["kind"]: obj for obj in rendered}
    return by_kind["InferenceReplica"], by_kind.get("HorizontalPodAutoscaler")


_MEMORY_METRIC: Obj = {
    "type": "Resource",
    "resource": {"name": "memory", "target": {"type": "Utilization", "averageUtilization": 60}},
}
_RUNTIME_HPA: Obj = {"class": "HPA", "hpa": {"metrics": [_MEMORY_METRIC]}}
_CPU_80: Obj = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
}


def test_replica_autoscaler_is_the_service_block_whole_not_merged_with_the_runtime() -> None:
    isvc = builders.isvc(deploymentMode="OMENative", engine={"autoscaler": {"class": "HPA"}})
    replica, hpa = _replica_and_scaler(isvc, {"autoscaler": _RUNTIME_HPA})
    # The block the running HPA comes from: the service's, so the default CPU target, not the memory metric.
    assert replica["spec"]["autoscaler"] == {"class": "HPA"}
    assert hpa is not None and hpa["spec"]["metrics"] == [_CPU_80]


@pytest.mark.parametrize(
    ("engine", "engine_config", "block"),
    [({}, {"autoscaler": _RUNTIME_HPA}, _RUNTIME_HPA), ({}, {}, {"class": "HPA"}),
     ({"autoscalerPolicyRef": {"name": "gpu"}}, {"autoscaler": _RUNTIME_HPA}, None)],
    ids=["runtime", "default", "policy-ref"],
)  # fmt: skip
def test_replica_autoscaler_follows_the_resolution_order(
    engine: Obj, engine_config: Obj, block: Obj | None
) -> None:
    isvc = builders.isvc(deploymentMode="OMENative", engine=engine)
    replica, _ = _replica_and_scaler(isvc, engine_config)
    # A policy reference outranks the runtime; the policy is not read here, so no block is claimed.
    assert replica["spec"].get("autoscaler") == block


@pytest.mark.parametrize(
    ("engine", "window"),
    [({}, 1200), ({"lifecycle": {"minReadySeconds": 900}}, 900), ({"lifecycle": {"minReadySeconds": 0}}, 0)],
    ids=["runtime", "service", "service-zero"],
)  # fmt: skip
def test_replica_min_ready_seconds_from_the_service_else_the_runtime(engine: Obj, window: int) -> None:
    isvc = builders.isvc(deploymentMode="OMENative", engine=engine)
    replica, _ = _replica_and_scaler(isvc, {"lifecycle": {"minReadySeconds": 1200}})
    spec = replica["spec"]
    assert spec["minReadySeconds"] == window
    assert "minReadySeconds" not in (spec.get("lifecycle") or {})  # the top-level field is the one in effect


def test_rollout_controls_and_excluded_annotations_reach_the_replica() -> None:
    isvc = builders.isvc(deploymentMode="OMENative", engine={"annotations": {"team": "a"}})
    isvc["metadata"]["annotations"] = {
        "ome.io/rollout-paused": "freeze",
        "ome.io/revision-history-limit": "3",
        "note": "x",
    }
    irep = _render(isvc)[("InferenceReplica", "llama-engine")]
    spec = irep["spec"]
    assert (spec["paused"], spec["pauseMode"], spec["revisionHistoryLimit"]) == (True, "Freeze", 3)
    excluded = irep["metadata"]["annotations"]["ome.io/revision-excluded-annotation-keys"]
    assert excluded == "note,ome.io/revision-history-limit,ome.io/rollout-paused"  # "team" is the component's
    isvc["metadata"]["annotations"]["ome.io/rollout-paused"] = "True"  # only the exact values pause
    assert "paused" not in _render(isvc)[("InferenceReplica", "llama-engine")]["spec"]


def test_multinode_renders_lws_without_pdb_or_hpa() -> None:
    isvc = builders.isvc(engine={"annotations": {modes.ANNOTATION: "MultiNode"}, "worker": {"size": 2}})
    rendered = _render(isvc, lws=True)
    assert sorted(rendered) == [("LeaderWorkerSet", "lws-llama-engine"), ("Service", "llama-engine")]
    lws = rendered[("LeaderWorkerSet", "lws-llama-engine")]
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 3
    assert rendered[("Service", "llama-engine")]["spec"]["selector"] == {"ray.io/node-type": "head"}


def test_multinode_without_lws_crd_fails() -> None:
    isvc = builders.isvc(engine={"annotations": {modes.ANNOTATION: "MultiNode"}})
    with pytest.raises(workloads.LeaderWorkerSetUnavailableError):
        _render(isvc, lws=False)


@pytest.mark.parametrize("component", ["engine", "router"])
def test_virtual_component_cannot_render(component: str) -> None:
    ann = {"annotations": {modes.ANNOTATION: "VirtualDeployment"}}
    isvc = builders.isvc(**{component: ann}) if component == "engine" else builders.isvc(router=ann)
    with pytest.raises(modes.UnreconcilableModeError):
        _render(isvc)


def test_long_names_truncate_service_but_not_deployment() -> None:
    name = "a" * 60
    rendered = _render(builders.isvc(name=name))
    assert ("Deployment", f"{name}-engine") in rendered
    services = [n for k, n in rendered if k == "Service"]
    assert services == [naming.truncate(f"{name}-engine")] and len(services[0]) == 63
