"""Fine-tuned weights: resolution errors, and what merged weights and adapters put into the pods."""

from __future__ import annotations

from typing import Any

import pytest

from ome.config.inferenceservice_config import InferenceServiceConfig, parse
from ome.resolution import components, fine_tuned
from ome.resolution.components import ModelSource
from tests.unit.resolution import builders

Obj = dict[str, Any]
URI = "oci://n/mycompany/b/fine-tuned/o/llama-3-2-3b-instruct-finance"
ENTRY = ('{"image": "ghcr.io/moirai-internal/ome-agent:v1.3.0", "authType": "InstancePrincipal",'
         ' "compartmentId": "ocid1.compartment.oc1..dummy", "region": "ap-osaka-1", "memoryRequest": "24Gi",'
         ' "memoryLimit": "24Gi", "cpuRequest": "4", "cpuLimit": "4"}')


def ftw(*, merged: bool = True, strategy: Any = "lora", uri: str = URI, configuration: Any = "default") -> Obj:
    spec: Obj = {"baseModelRef": {"name": "llama"}, "modelType": "LoRA",
                 "hyperParameters": {"strategy": strategy}, "storage": {"storageUri": uri}}
    if configuration == "default":
        spec["configuration"] = {"merged_weights": True} if merged else {}
    elif configuration is not None:
        spec["configuration"] = configuration
    return {"metadata": {"name": "finance"}, "spec": spec}


def isvc(*names: str) -> Obj:
    obj = builders.isvc()
    obj["spec"]["model"]["fineTunedWeights"] = list(names)
    return obj


def base_model(vendor: str = "meta") -> Obj:
    model = builders.model()
    model["spec"]["vendor"] = vendor
    return model


def config(with_entry: bool = True) -> InferenceServiceConfig:
    return parse({"fineTunedAdapter": ENTRY}) if with_entry else InferenceServiceConfig()


def test_no_fine_tuned_weights_is_none() -> None:
    assert fine_tuned.resolve(builders.isvc(), None, base_model()) is None


@pytest.mark.parametrize(
    ("names", "obj", "message"),
    [
        (("a", "b"), ftw(), "stacked fine-tuned serving is not supported yet"),
        (("finance",), None, "No FineTunedWeight with the name: finance"),
        (("finance",), ftw(configuration=None), "has no configuration"),
        (("finance",), ftw(strategy=3), 'hyper-parameter "strategy"'),
        (("finance",), ftw(uri="oci://mycompany/fine-tuned"), "invalid OCI storage URI format"),
    ],
)
def test_unservable_fine_tuned_weights_name_the_problem(names: tuple[str, ...], obj: Obj | None,
                                                        message: str) -> None:
    with pytest.raises(fine_tuned.FineTunedError, match=message):
        fine_tuned.resolve(isvc(*names), obj, base_model())


def test_merged_weights_download_the_suffixed_object() -> None:
    got = fine_tuned.resolve(isvc("finance"), ftw(merged=True), base_model())
    assert got is not None and got.merged
    assert (got.oci_namespace, got.bucket, got.object_name) == (
        "mycompany", "fine-tuned", "llama-3-2-3b-instruct-finance-merged-weight")
    adapter = fine_tuned.resolve(isvc("finance"), ftw(merged=False), base_model())
    assert adapter is not None and not adapter.merged
    assert adapter.object_name == "llama-3-2-3b-instruct-finance"


def _engine(tuned: fine_tuned.FineTuned, cfg: InferenceServiceConfig) -> components.ComponentPlan:
    source = ModelSource.from_object("ClusterBaseModel", base_model())
    [plan] = components.build_plans(isvc("finance"), builders.runtime(), source, cfg, fine_tuned=tuned)
    return plan


def _env(container: Obj) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env") or []}


def test_merged_weights_pod_gets_init_container_mount_env_and_no_model_selector() -> None:
    tuned = fine_tuned.resolve(isvc("finance"), ftw(merged=True), base_model())
    assert tuned is not None
    plan = _engine(tuned, config())
    spec = plan.pod_spec
    [init] = spec["initContainers"]
    assert init["name"] == "fine-tuned-adapter"
    assert init["image"] == "ghcr.io/moirai-internal/ome-agent:v1.3.0"
    assert init["resources"] == {"requests": {"cpu": "4", "memory": "24Gi"},
                                 "limits": {"cpu": "4", "memory": "24Gi"}}
    assert _env(init)["OME_AGENT_MODEL_OBJECT_NAME"] == "llama-3-2-3b-instruct-finance-merged-weight"
    assert {"name": "model-empty-dir", "emptyDir": {"medium": "Memory"}} in spec["volumes"]
    runner = components.main_container(spec)
    assert {"name": "model-empty-dir", "mountPath": "/opt/ml/model"} in runner["volumeMounts"]
    env = _env(runner)
    assert env["MODEL_PATH"] == "/opt/ml/model"
    assert env["SERVED_MODEL_NAME"] == "/data/finance"
    assert not any(k.startswith("models.ome.io/") for k in spec.get("nodeSelector") or {})
    assert not any(v.get("hostPath") for v in spec["volumes"])
    assert plan.labels["fine-tuned-serving"] == "true"
    assert plan.labels["fine-tuned-serving-with-merged-weights"] == "true"
    assert plan.labels["fine-tuned-weight-ft-strategy"] == "lora"
    assert plan.annotations["ome.io/inject-fine-tuned-adapter"] == "finance"
    assert plan.annotations["ome.io/inject-model-init"] == "false"


def test_adapter_keeps_the_base_model_mount_and_node_selector() -> None:
    tuned = fine_tuned.resolve(isvc("finance"), ftw(merged=False), base_model(vendor="acme"))
    assert tuned is not None
    spec = _engine(tuned, config()).pod_spec
    assert any(k.startswith("models.ome.io/") for k in spec["nodeSelector"])
    assert any((v.get("hostPath") or {}).get("path") == "/raid/models/llama" for v in spec["volumes"])
    assert "MODEL_PATH" not in _env(components.main_container(spec))  # not meta: the runner sets it


def test_cohere_tfew_mounts_under_tfew() -> None:
    tuned = fine_tuned.resolve(isvc("finance"), ftw(merged=False, strategy="tfew"), base_model("cohere"))
    assert tuned is not None
    runner = components.main_container(_engine(tuned, config()).pod_spec)
    assert {"name": "model-empty-dir", "mountPath": "/opt/ml/tfew"} in runner["volumeMounts"]
    assert _env(runner)["TFEW_PATH"] == "/opt/ml/tfew/fastertransformer/1"


def test_missing_config_entry_is_an_error_not_a_half_rendered_pod() -> None:
    tuned = fine_tuned.resolve(isvc("finance"), ftw(), base_model())
    assert tuned is not None
    with pytest.raises(fine_tuned.FineTunedError, match="fineTunedAdapter entry is missing"):
        _engine(tuned, config(with_entry=False))
    partial = parse({"fineTunedAdapter": '{"image": "x", "authType": "InstancePrincipal"}'})
    with pytest.raises(fine_tuned.FineTunedError, match="compartmentId"):
        _engine(tuned, partial)
