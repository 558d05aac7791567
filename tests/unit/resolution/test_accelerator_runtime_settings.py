"""Per-accelerator runtime settings (serving-runtimes.md "Per-accelerator configuration", row C14)."""

from __future__ import annotations

from typing import Any

from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.resolution import accelerators as acc
from ome.resolution import workload_metadata
from ome.resolution.components import ModelSource, build_plans, main_container
from tests.unit.resolution import builders

Obj = dict[str, Any]
CONFIG = InferenceServiceConfig()
MODEL_OBJ = builders.model()
MODEL = ModelSource.from_object("ClusterBaseModel", MODEL_OBJ)
FACTS = workload_metadata.ModelFacts.from_object(MODEL_OBJ)
L40S: Obj = {"apiVersion": "ome.io/v1beta1", "kind": "AcceleratorClass", "metadata": {"name": "nvidia-l40s"},
             "spec": {"discovery": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"}}}}  # fmt: skip
H100: Obj = {**L40S, "metadata": {"name": "nvidia-h100"}}
DOCS_ARGS = ["--host=0.0.0.0", "--port=8080", "--model-path=$(MODEL_PATH)", "--tp-size=8", "--pp-size=1",
             "--mem-frac=0.9"]  # fmt: skip


def docs_runtime(auto_select: bool = False) -> Obj:
    """The docs' sglang-llama-3-3-70b (trimmed to what the settings touch)."""
    rt = builders.runtime("sglang-llama-3-3-70b")
    entry = rt["spec"]["supportedModelFormats"][0]
    entry["autoSelect"] = auto_select
    entry["acceleratorConfig"] = {
        "nvidia-l40s": {
            "tensorParallelismOverride": {"tensorParallelSize": 4, "pipelineParallelSize": 2},
            "runtimeArgsOverride": ["--mem-frac=0.85"],
        }
    }
    rt["spec"]["acceleratorRequirements"] = {"acceleratorClasses": ["nvidia-h100", "nvidia-l40s"]}
    rt["spec"]["engineConfig"]["runner"]["command"] = ["python3", "-m", "sglang.launch_server"]
    rt["spec"]["engineConfig"]["runner"]["args"] = list(DOCS_ARGS)
    return rt


def engine_container(rt: Obj, cls: Obj | None, **isvc_kw: Any) -> Obj:
    isvc = builders.isvc(runtime=isvc_kw.pop("runtime", "sglang-llama-3-3-70b"), **isvc_kw)
    plan = build_plans(
        isvc, rt, MODEL, CONFIG, accelerators={"engine": cls} if cls else None, model_facts=FACTS
    )
    return main_container(plan[0].pod_spec)


def test_docs_example_on_the_configured_class() -> None:
    args = engine_container(docs_runtime(), L40S)["args"]
    assert args == ["--host=0.0.0.0", "--port=8080", "--model-path=$(MODEL_PATH)", "--tp-size=4", "--pp-size=2",
                    "--mem-frac=0.85"]  # fmt: skip


def test_a_class_the_config_leaves_out_keeps_the_runners_flags() -> None:
    assert engine_container(docs_runtime(), H100)["args"] == DOCS_ARGS
    assert engine_container(docs_runtime(), None)["args"] == DOCS_ARGS


def test_auto_selected_runtime_counts_only_auto_select_entries() -> None:
    assert engine_container(docs_runtime(auto_select=False), L40S, runtime=None)["args"] == DOCS_ARGS
    assert "--tp-size=4" in engine_container(docs_runtime(auto_select=True), L40S, runtime=None)["args"]


def test_parallelism_rewrites_an_existing_flag_only_in_args_then_command() -> None:
    container: Obj = {"command": ["serve", "--tensor-parallel-size", "8"], "args": ["--port=1"]}
    acc.apply_runtime_settings(container, {"tensorParallelismOverride": {"tensorParallelSize": 2,
                                                                          "pipelineParallelSize": 3}})  # fmt: skip
    assert container["command"] == ["serve", "--tensor-parallel-size", "2"]
    assert container["args"] == ["--port=1"]  # never adds --pp-size


def test_args_override_replaces_values_and_appends_the_rest() -> None:
    container: Obj = {"command": ["serve", "--quantization=fp8"], "args": ["--mem-frac", "0.9", "--x=1"]}
    acc.apply_runtime_settings(
        container, {"runtimeArgsOverride": ["--mem-frac=0.8", "--quantization=awq", "--y"]}
    )
    assert container["command"] == ["serve", "--quantization=fp8"]  # stays in command, override after it
    assert container["args"] == ["--mem-frac", "0.8", "--x=1", "--quantization=awq", "--y"]


def test_environment_override_wins_over_the_inference_services_value() -> None:
    rt = docs_runtime()
    rt["spec"]["supportedModelFormats"][0]["acceleratorConfig"]["nvidia-l40s"]["environmentOverride"] = {
        "NCCL_DEBUG": "WARN"
    }
    engine = {"runner": {"name": "ome-container", "env": [{"name": "NCCL_DEBUG", "value": "INFO"}]}}
    env = engine_container(rt, L40S, engine=engine)["env"]
    assert [e for e in env if e["name"] == "NCCL_DEBUG"] == [{"name": "NCCL_DEBUG", "value": "WARN"}]


def test_documented_no_effect_fields_change_nothing() -> None:
    container: Obj = {"args": list(DOCS_ARGS)}
    acc.apply_runtime_settings(
        container, {"minMemoryPerBillionParams": 2, "tensorParallelismOverride": {"dataParallelSize": 4}}
    )
    assert container == {"args": DOCS_ARGS}


def test_misspelled_class_key_is_ignored() -> None:
    spec = docs_runtime()["spec"]
    assert acc.runtime_settings(spec, "nvidia-L40S") is None
    assert acc.runtime_settings(spec, "nvidia-l40s") is not None
