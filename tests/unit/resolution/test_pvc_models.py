"""`pvc://` models: every serving pod mounts the claim read-only at /opt/ml/model with the URI's sub-path,
gets MODEL_PATH, and selects no node (no node ever carries a pvc:// model's label); in every mode."""

from __future__ import annotations

from typing import Any

from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.resolution import modes, workloads
from ome.resolution.components import PVC_MOUNT_PATH, ModelSource, build_plans
from tests.unit.resolution import builders

Obj = dict[str, Any]
CONFIG = InferenceServiceConfig()
VOLUME = "llama-3-2-1b-instruct"
CLAIM_VOLUME = {"name": VOLUME, "persistentVolumeClaim": {"claimName": "model-storage", "readOnly": True}}
CLAIM_MOUNT = {"name": VOLUME, "mountPath": "/opt/ml/model", "subPath": "models/llama-3-2-1b-instruct",
               "readOnly": True}


def pvc_model(uri: str = "pvc://model-storage/models/llama-3-2-1b-instruct", *, path: str | None = None) -> Obj:
    obj = builders.model()
    obj["kind"] = "BaseModel"
    obj["metadata"]["namespace"] = "demo"
    obj["spec"]["storage"] = {"storageUri": uri, **({"path": path} if path else {})}
    return obj


PVC_MODEL = ModelSource.from_object("BaseModel", pvc_model())


def _env(container: Obj) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container.get("env") or []}


def _assert_mounts_the_claim(pod: Obj) -> None:
    container = pod["containers"][0]
    assert _env(container)["MODEL_PATH"] == "/opt/ml/model"
    assert CLAIM_MOUNT in container["volumeMounts"]
    assert CLAIM_VOLUME in pod["volumes"]
    assert not any("hostPath" in v for v in pod["volumes"])
    assert not any(k.startswith("models.ome.io/") for k in pod.get("nodeSelector") or {})


def _render(isvc: Obj, *, lws: bool = False) -> dict[tuple[str, str], Obj]:
    out = {}
    for plan in build_plans(isvc, builders.runtime(), PVC_MODEL, CONFIG, runtime_name="vllm-llama"):
        for obj in workloads.render_component(isvc, plan, CONFIG, lws_served=lws):
            out[(obj["kind"], obj["metadata"]["name"])] = obj
    return out


def test_source_reads_claim_and_sub_path_from_the_uri() -> None:
    assert PVC_MODEL.claim == "model-storage"
    assert PVC_MODEL.sub_path == "models/llama-3-2-1b-instruct"
    assert PVC_MODEL.path == PVC_MOUNT_PATH == "/opt/ml/model"


def test_cluster_model_uri_names_the_claims_namespace_before_the_colon() -> None:
    obj = builders.model()
    obj["spec"]["storage"] = {"storageUri": "pvc://llama-demo:model-storage/llama-3-2-1b-instruct"}
    source = ModelSource.from_object("ClusterBaseModel", obj)
    assert (source.claim, source.sub_path, source.namespace) == ("model-storage", "llama-3-2-1b-instruct", None)


def test_storage_path_does_not_move_the_mount() -> None:
    """The docs fix the mount at /opt/ml/model whatever spec.storage.path says."""
    source = ModelSource.from_object("BaseModel", pvc_model(path="/raid/models/llama"))
    assert source.path == "/opt/ml/model" and source.claim == "model-storage"


def test_malformed_uri_mounts_nothing_and_keeps_the_selector() -> None:
    """A URI without a sub-path is a Failed model (PVCInvalid); its pods must not mount the whole volume."""
    source = ModelSource.from_object("BaseModel", pvc_model("pvc://model-storage"))
    assert source.claim is None
    [plan] = build_plans(builders.isvc(), builders.runtime(), source, CONFIG)
    assert "volumes" not in plan.pod_spec
    assert plan.pod_spec["nodeSelector"] == {"models.ome.io/demo.basemodel.llama-3-2-1b-instruct": "Ready"}


def test_rawdeployment_pods_mount_the_claim_and_select_no_node() -> None:
    dep = _render(builders.isvc())[("Deployment", "llama-engine")]
    _assert_mounts_the_claim(dep["spec"]["template"]["spec"])


def test_user_model_path_still_wins() -> None:
    isvc = builders.isvc(engine={"runner": {"env": [{"name": "MODEL_PATH", "value": "mine"}]}})
    [plan] = build_plans(isvc, builders.runtime(), PVC_MODEL, CONFIG)
    assert _env(plan.pod_spec["containers"][0])["MODEL_PATH"] == "mine"
    assert CLAIM_MOUNT in plan.pod_spec["containers"][0]["volumeMounts"]


def test_accelerator_node_selector_survives_without_a_model_selector() -> None:
    isvc = builders.isvc(engine={"nodeSelector": {"pool": "gpu"}})
    [plan] = build_plans(isvc, builders.runtime(), PVC_MODEL, CONFIG)
    assert plan.pod_spec["nodeSelector"] == {"pool": "gpu"}


def test_omenative_single_pod_runner_mounts_the_claim() -> None:
    isvc = builders.isvc(engine={"annotations": {modes.ANNOTATION: "OMENative"}})
    [runner] = _render(isvc)[("InferenceReplica", "llama-engine")]["spec"]["runners"]
    _assert_mounts_the_claim(runner["template"]["spec"])


def test_omenative_leader_and_workers_mount_the_claim() -> None:
    isvc = builders.isvc(engine={"leader": {}, "worker": {"size": 2}})
    runners = _render(isvc)[("InferenceReplica", "llama-engine")]["spec"]["runners"]
    assert [r["name"] for r in runners] == ["leader", "worker"]
    for runner in runners:
        _assert_mounts_the_claim(runner["template"]["spec"])


def test_multinode_leader_and_worker_templates_mount_the_claim() -> None:
    isvc = builders.isvc(engine={"annotations": {modes.ANNOTATION: "MultiNode"}, "worker": {"size": 2}})
    lws = _render(isvc, lws=True)[("LeaderWorkerSet", "lws-llama-engine")]
    template = lws["spec"]["leaderWorkerTemplate"]
    _assert_mounts_the_claim(template["leaderTemplate"]["spec"])
    _assert_mounts_the_claim(template["workerTemplate"]["spec"])


def test_decoder_mounts_the_claim_and_router_does_not() -> None:
    # The decoder names a runner: OME changes only the runner's container (a runnerless one gets no env).
    isvc = builders.isvc(decoder={"runner": {"image": "decoder:1"}}, router={})
    rendered = _render(isvc)
    _assert_mounts_the_claim(rendered[("Deployment", "llama-decoder")]["spec"]["template"]["spec"])
    router = rendered[("Deployment", "llama-router")]["spec"]["template"]["spec"]
    assert "volumes" not in router and "nodeSelector" not in router


def test_pvc_overlay_mounts_its_claim_under_model_overlays() -> None:
    overlay_obj = builders.model("lora")
    overlay_obj["spec"]["storage"] = {"storageUri": "pvc://default:adapters/lora"}
    overlay = ModelSource.from_object("ClusterBaseModel", overlay_obj)
    hosted = ModelSource.from_object("ClusterBaseModel", builders.model())
    [plan] = build_plans(builders.isvc(), builders.runtime(), hosted, CONFIG, overlays=[overlay])
    container = plan.pod_spec["containers"][0]
    assert {"name": "overlay-lora", "mountPath": "/opt/ml/model-overlays/lora", "subPath": "lora",
            "readOnly": True} in container["volumeMounts"]
    assert {"name": "overlay-lora", "persistentVolumeClaim": {"claimName": "adapters", "readOnly": True}} in (
        plan.pod_spec["volumes"]
    )
    # The hosted primary model still pins its node; the overlay adds no label of its own.
    assert plan.pod_spec["nodeSelector"] == {"models.ome.io/clusterbasemodel.llama-3-2-1b-instruct": "Ready"}
