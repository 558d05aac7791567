"""Component plans: declared components only, pod specs with model injection, labels, grace period."""

from __future__ import annotations

from typing import Any

from ome.config.inferenceservice_config import InferenceServiceConfig, parse
from ome.resolution.components import ModelSource, build_plans, overlay_env
from tests.unit.resolution import builders

Obj = dict[str, Any]
CONFIG = InferenceServiceConfig()
MODEL = ModelSource.from_object("ClusterBaseModel", builders.model())


def _env(container: Obj) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container.get("env") or []}


def test_only_declared_components_exist_runtime_router_config_adds_none() -> None:
    rt = builders.runtime(router_config={"runner": {"image": "router"}})
    plans = build_plans(builders.isvc(), rt, MODEL, CONFIG, runtime_name="vllm-llama")
    assert [p.component for p in plans] == ["engine"]


def test_components_come_in_reconcile_order() -> None:
    isvc = builders.isvc(router={}, decoder={})
    plans = build_plans(isvc, builders.runtime(), MODEL, CONFIG)
    assert [p.component for p in plans] == ["engine", "decoder", "router"]


def test_engine_gets_model_path_read_only_volume_and_ready_node_selector() -> None:
    [plan] = build_plans(builders.isvc(), builders.runtime(), MODEL, CONFIG, runtime_name="vllm-llama")
    pod = plan.pod_spec
    [container] = pod["containers"]
    assert container["image"] == "vllm/vllm-openai:v0.9.0"
    assert _env(container)["MODEL_PATH"] == "/raid/models/llama"
    assert {
        "name": "llama-3-2-1b-instruct",
        "mountPath": "/raid/models/llama",
        "readOnly": True,
    } in container["volumeMounts"]
    assert {"name": "llama-3-2-1b-instruct", "hostPath": {"path": "/raid/models/llama"}} in pod["volumes"]
    assert pod["nodeSelector"] == {"models.ome.io/clusterbasemodel.llama-3-2-1b-instruct": "Ready"}


def test_namespaced_model_uses_basemodel_label_key() -> None:
    obj = builders.model()
    obj["kind"] = "BaseModel"
    obj["metadata"]["namespace"] = "demo"
    [plan] = build_plans(
        builders.isvc(), builders.runtime(), ModelSource.from_object("BaseModel", obj), CONFIG
    )
    assert plan.pod_spec["nodeSelector"] == {"models.ome.io/demo.basemodel.llama-3-2-1b-instruct": "Ready"}


def test_user_model_path_is_kept() -> None:
    isvc = builders.isvc(engine={"runner": {"env": [{"name": "MODEL_PATH", "value": "mine"}]}})
    [plan] = build_plans(isvc, builders.runtime(), MODEL, CONFIG)
    assert _env(plan.pod_spec["containers"][0])["MODEL_PATH"] == "mine"


def test_runtime_only_isvc_skips_all_model_work() -> None:
    isvc = builders.isvc(model=None, runtime="vllm-llama")
    [plan] = build_plans(isvc, builders.runtime(), None, CONFIG, runtime_name="vllm-llama")
    pod = plan.pod_spec
    assert "MODEL_PATH" not in _env(pod["containers"][0])
    assert "volumes" not in pod
    assert "nodeSelector" not in pod


def test_router_gets_no_model_but_its_config_as_env() -> None:
    isvc = builders.isvc(router={"config": {"ROUTING": "round-robin"}, "runner": {"image": "router:1"}})
    plans = build_plans(isvc, builders.runtime(), MODEL, CONFIG)
    router = plans[1].pod_spec
    assert "nodeSelector" not in router
    assert _env(router["containers"][0]) == {"ROUTING": "round-robin"}


def test_termination_grace_defaults_from_config_unless_set() -> None:
    [plan] = build_plans(builders.isvc(), builders.runtime(), MODEL, CONFIG)
    assert plan.pod_spec["terminationGracePeriodSeconds"] == 600
    custom = parse(
        {"deploy": '{"defaultDeploymentMode": "RawDeployment", "terminationGracePeriodSeconds": 45}'}
    )
    [plan] = build_plans(builders.isvc(), builders.runtime(), MODEL, custom)
    assert plan.pod_spec["terminationGracePeriodSeconds"] == 45
    isvc = builders.isvc(engine={"terminationGracePeriodSeconds": 5})
    [plan] = build_plans(isvc, builders.runtime(), MODEL, CONFIG)
    assert plan.pod_spec["terminationGracePeriodSeconds"] == 5


def test_grace_default_reaches_leader_and_worker() -> None:
    isvc = builders.isvc(
        engine={"leader": {"runner": {"image": "l"}}, "worker": {"size": 2, "runner": {"image": "w"}}}
    )
    [plan] = build_plans(isvc, builders.runtime(), MODEL, CONFIG)
    assert plan.mode == "OMENative"
    assert plan.leader_pod_spec is not None and plan.worker_pod_spec is not None
    assert plan.leader_pod_spec["terminationGracePeriodSeconds"] == 600
    assert plan.worker_pod_spec["containers"][0]["image"] == "w"
    assert plan.worker_size == 2
    assert "MODEL_PATH" in _env(plan.worker_pod_spec["containers"][0])


def test_labels_isvc_then_component_then_ome_wins() -> None:
    isvc = builders.isvc(labels={"team": "a", "component": "spoof"}, engine={"labels": {"team": "b"}})
    [plan] = build_plans(isvc, builders.runtime(), MODEL, CONFIG, runtime_name="vllm-llama")
    assert plan.labels == {
        "team": "b",
        "component": "engine",
        "ome.io/inferenceservice": "llama",
        "serving-runtime": "vllm-llama",
        "fine-tuned-serving": "false",
        "base-model-name": "llama-3-2-1b-instruct",
        "base-model-size": "SMALL",
        "base-model-type": "Serving",
    }


def test_workload_annotations_drop_only_the_documented_keys() -> None:
    # labels-and-annotations page: everything is copied but kubectl's last-applied configuration, the
    # rollout verbs and the in-place image transition; the ISVC's own deploymentMode is carried too.
    isvc = builders.isvc(
        annotations={
            "kubectl.kubernetes.io/last-applied-configuration": "{}",
            "ome.io/rollout-promote": "abcdef12",
            "ome.io/rollout-rollback": "true",
            "internal.ome.io/in-place-image-transition": "{}",
            "keep": "1",
            "ome.io/deploymentMode": "RawDeployment",
        }
    )
    [plan] = build_plans(isvc, builders.runtime(), None, CONFIG)
    assert plan.annotations == {"keep": "1", "ome.io/deploymentMode": "RawDeployment"}


def test_overlays_mount_under_model_overlays_with_env() -> None:
    overlay = ModelSource("ClusterBaseModel", "qwen-2.5-lora", None, "/raid/models/qwen")
    [plan] = build_plans(builders.isvc(), builders.runtime(), MODEL, CONFIG, overlays=[overlay])
    container = plan.pod_spec["containers"][0]
    assert _env(container)["OVERLAY_QWEN_2_5_LORA_MODEL_PATH"] == "/opt/ml/model-overlays/qwen-2.5-lora"
    assert {
        "name": "overlay-qwen-2.5-lora",
        "mountPath": "/opt/ml/model-overlays/qwen-2.5-lora",
        "readOnly": True,
    } in container["volumeMounts"]


def test_overlay_env_name() -> None:
    assert overlay_env("my-adapter") == "OVERLAY_MY_ADAPTER_MODEL_PATH"
