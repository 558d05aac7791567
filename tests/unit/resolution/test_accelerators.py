"""AcceleratorClass selection (names, policies, constraints, ties) and what the class does to the pods."""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import pytest

from ome.config.inferenceservice_config import InferenceServiceConfig, parse
from ome.resolution import accelerators as acc
from ome.resolution import fine_tuned
from ome.resolution.components import ModelSource, build_plans, main_container
from tests.unit.resolution import builders

Obj = dict[str, Any]
CONFIG = InferenceServiceConfig()
MODEL = ModelSource.from_object("ClusterBaseModel", builders.model())
READY = "models.ome.io/clusterbasemodel.llama-3-2-1b-instruct"


def klass(
    name: str,
    *,
    memory: str | None = "80Gi",
    product: str | None = None,
    cost: Obj | None = None,
    family: str = "hopper",
    vendor: str = "nvidia",
    capability: str | None = "9.0",
    bandwidth: str | None = None,
    features: list[str] | None = None,
    performance: Obj | None = None,
    resources: list[Obj] | None = None,
    affinity: Obj | None = None,
) -> Obj:
    capabilities: Obj = {}
    if memory is not None:
        capabilities["memoryGB"] = memory
    if capability is not None:
        capabilities["computeCapability"] = capability
    if bandwidth is not None:
        capabilities["memoryBandwidthGBps"] = bandwidth
    if features is not None:
        capabilities["features"] = features
    if performance is not None:
        capabilities["performance"] = performance
    discovery: Obj = {"nodeSelector": {"nvidia.com/gpu.product": product or name.upper()}}
    if affinity is not None:
        discovery["affinity"] = affinity
    spec: Obj = {"vendor": vendor, "family": family, "discovery": discovery, "capabilities": capabilities}
    if cost is not None:
        spec["cost"] = cost
    if resources is not None:
        spec["resources"] = resources
    return {"apiVersion": "ome.io/v1beta1", "kind": "AcceleratorClass", "metadata": {"name": name},
            "spec": spec}


# The two classes of the select-accelerators guide.
H100 = klass("nvidia-h100", memory="80Gi", product="NVIDIA-H100-80GB-HBM3", bandwidth="3350",
             features=["fp8", "nvlink"], performance={"fp16Tflops": 989}, cost={"perHour": "10"})
H200 = klass("nvidia-h200", memory="141Gi", product="NVIDIA-H200", bandwidth="4800",
             features=["fp8", "nvlink"], performance={"fp16Tflops": 989}, cost={"perHour": "12"})
GUIDE = {c["metadata"]["name"]: c for c in (H100, H200)}


def runtime_spec(*classes: str) -> Obj:
    spec: Obj = builders.runtime()["spec"]
    if classes:
        spec["acceleratorRequirements"] = {"acceleratorClasses": list(classes)}
    return spec


def svc(selector: Obj | None = None, *, engine: Obj | None = None, decoder: Obj | None = None,
        router: Obj | None = None) -> Obj:
    extra: Obj = {"acceleratorSelector": selector} if selector is not None else {}
    return builders.isvc(engine=engine, decoder=decoder, router=router, **extra)


def chosen(isvc: Obj, spec: Obj, classes: dict[str, Obj], component: str = "engine") -> str | None:
    found = acc.select(isvc, spec, component, classes)
    return None if found is None else str(found["metadata"]["name"])


# -- selection ---------------------------------------------------------------------------------------


def test_runtime_without_classes_gives_no_class_even_to_a_named_one() -> None:
    assert chosen(svc({"acceleratorClass": "nvidia-h100"}), runtime_spec(), GUIDE) is None
    spec = runtime_spec()
    spec["acceleratorRequirements"] = {"acceleratorClasses": []}
    assert chosen(svc({"acceleratorClass": "nvidia-h100"}), spec, GUIDE) is None
    assert acc.select_all(svc({"policy": "Cheapest"}), runtime_spec(), GUIDE) == {}


def test_neither_name_nor_policy_gives_no_class() -> None:
    spec = runtime_spec("nvidia-h100", "nvidia-h200")
    assert chosen(svc(), spec, GUIDE) is None
    assert chosen(svc({"constraints": {"minMemory": 80}}), spec, GUIDE) is None
    annotated = svc()
    annotated["metadata"]["annotations"] = {"ome.io/accelerator-class": "nvidia-h100"}
    assert chosen(annotated, spec, GUIDE) is None


def test_a_name_wins_over_any_policy_and_the_override_over_the_selector() -> None:
    spec = runtime_spec("nvidia-h100", "nvidia-h200")
    assert chosen(svc({"acceleratorClass": "nvidia-h200", "policy": "Cheapest"}), spec, GUIDE) == "nvidia-h200"
    isvc = svc({"acceleratorClass": "nvidia-h100"}, engine={"acceleratorOverride": {"acceleratorClass": "nvidia-h200"}})
    assert chosen(isvc, spec, GUIDE) == "nvidia-h200"
    # An override's policy has no effect while the selector names a class.
    isvc = svc({"acceleratorClass": "nvidia-h200"}, engine={"acceleratorOverride": {"policy": "Cheapest"}})
    assert chosen(isvc, spec, GUIDE) == "nvidia-h200"


def test_a_named_class_need_not_be_in_the_runtimes_list() -> None:
    assert chosen(svc({"acceleratorClass": "nvidia-h200"}), runtime_spec("nvidia-h100"), GUIDE) == "nvidia-h200"


def test_a_missing_named_class_is_an_error_naming_the_component() -> None:
    isvc = svc({"acceleratorClass": "nvidia-l40s"})
    with pytest.raises(acc.AcceleratorClassError) as bare:
        acc.select(isvc, runtime_spec("nvidia-h100"), "engine", GUIDE)
    assert bare.value.message == "accelerator class nvidia-l40s not found at cluster scope"
    with pytest.raises(acc.AcceleratorClassError) as wrapped:
        acc.select_all(isvc, runtime_spec("nvidia-h100"), GUIDE)
    assert wrapped.value.message == (
        "Failed to get accelerator class for engine: accelerator class nvidia-l40s not found at cluster scope"
    )


def test_the_decoder_error_names_the_decoder() -> None:
    isvc = svc({"acceleratorClass": "nvidia-h100"}, decoder={"acceleratorOverride": {"acceleratorClass": "x"}})
    with pytest.raises(acc.AcceleratorClassError, match="^Failed to get accelerator class for decoder: "):
        acc.select_all(isvc, runtime_spec("nvidia-h100"), GUIDE)


def test_prefill_decode_example_engine_by_policy_decoder_by_name() -> None:
    isvc = svc({"policy": "Cheapest"}, decoder={"acceleratorOverride": {"acceleratorClass": "nvidia-h200"}},
               router={})
    got = acc.select_all(isvc, runtime_spec("nvidia-h100", "nvidia-h200"), GUIDE)
    assert {c: k["metadata"]["name"] for c, k in got.items()} == {"engine": "nvidia-h100", "decoder": "nvidia-h200"}


def test_the_router_never_gets_a_class() -> None:
    isvc = svc({"acceleratorClass": "nvidia-h100"}, router={})
    assert chosen(isvc, runtime_spec("nvidia-h100"), GUIDE, "router") is None


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ({"policy": "BestFit", "constraints": {"minMemory": 80}}, "nvidia-h100"),
        ({"policy": "Cheapest"}, "nvidia-h100"),
        ({"policy": "MostCapable"}, "nvidia-h200"),
        ({"policy": "FirstAvailable"}, "nvidia-h100"),
    ],
)
def test_the_guides_policy_table(selector: Obj, expected: str) -> None:
    assert chosen(svc(selector), runtime_spec("nvidia-h100", "nvidia-h200"), GUIDE) == expected


def test_first_available_follows_the_runtimes_order_and_skips_missing_classes() -> None:
    assert chosen(svc({"policy": "FirstAvailable"}), runtime_spec("nvidia-h200", "nvidia-h100"), GUIDE) == (
        "nvidia-h200"
    )
    assert chosen(svc({"policy": "FirstAvailable"}), runtime_spec("gone", "nvidia-h100"), GUIDE) == "nvidia-h100"


def test_a_policy_with_nothing_qualifying_gives_no_class() -> None:
    isvc = svc({"policy": "FirstAvailable", "constraints": {"minMemory": 200}})
    assert chosen(isvc, runtime_spec("nvidia-h100", "nvidia-h200"), GUIDE) is None
    assert chosen(svc({"policy": "Cheapest"}), runtime_spec("gone"), GUIDE) is None


def test_override_constraints_have_no_effect() -> None:
    isvc = svc(engine={"acceleratorOverride": {"policy": "FirstAvailable",
                                                "constraints": {"excludedClasses": ["nvidia-h100"]}}})
    assert chosen(isvc, runtime_spec("nvidia-h100", "nvidia-h200"), GUIDE) == "nvidia-h100"
    isvc["spec"]["acceleratorSelector"] = {"constraints": {"excludedClasses": ["nvidia-h100"]}}
    assert chosen(isvc, runtime_spec("nvidia-h100", "nvidia-h200"), GUIDE) == "nvidia-h200"


@pytest.mark.parametrize(
    ("constraints", "passes"),
    [
        ({"excludedClasses": ["a"]}, False),
        ({"architectureFamilies": ["HOPPER"]}, True),
        ({"architectureFamilies": ["Nvidia-Hopper"]}, True),
        ({"architectureFamilies": ["amd-hopper", "ada"]}, False),
        ({"minMemory": 80, "maxMemory": 80}, True),
        ({"minMemory": 81}, False),
        ({"maxMemory": 79}, False),
        ({"requiredFeatures": ["FP8"]}, True),
        ({"requiredFeatures": ["fp8", "nvlink"]}, False),
        ({"minArchitectureVersion": "9.0"}, True),
        ({"minArchitectureVersion": "10.0"}, True),  # text comparison: "9.0" >= "10.0"
        ({"minArchitectureVersion": "9.5"}, False),
        ({"minComputePerformanceTFLOPS": 10_000, "preferredPrecisions": ["int4"]}, True),  # scoring only
    ],
)
def test_constraints(constraints: Obj, passes: bool) -> None:
    assert acc.meets_constraints(klass("a", features=["fp8"]), constraints) is passes


def test_memory_reads_whole_gib_rounded_down() -> None:
    assert acc.memory_gib(klass("a", memory="80Gi")) == 80
    assert acc.memory_gib(klass("a", memory="80G")) == 74
    assert acc.memory_gib(klass("a", memory="80")) == 0
    assert not acc.meets_constraints(klass("a", memory=None), {"minMemory": 1})
    assert not acc.meets_constraints(klass("a", capability=None), {"minArchitectureVersion": "8.0"})


def test_quantities() -> None:
    assert acc.quantity("80Gi") == Decimal(80 * 2**30)
    assert acc.quantity("4.5") == Decimal("4.5")
    assert acc.quantity("1500m") == Decimal("1.5")
    assert acc.quantity("1e3") == Decimal(1000)
    assert acc.quantity(3350) == Decimal(3350)
    assert acc.quantity("lots") is None and acc.quantity(None) is None


def test_cheapest_prefers_spot_then_hourly_then_tokens_then_tier_and_leaves_out_classes_without_cost() -> None:
    classes = {
        "a": klass("a", cost={"perHour": "4.5", "spotPerHour": "2.1"}),
        "b": klass("b", cost={"perHour": "1.8", "spotPerHour": "2.5"}),
        "c": klass("c"),
    }
    spec = runtime_spec("c", "b", "a")
    assert chosen(svc({"policy": "Cheapest"}), spec, classes) == "a"  # spot 2.1 beats spot 2.5
    classes = {"a": klass("a", cost={"perMillionTokens": "3"}), "b": klass("b", cost={"perHour": "99"})}
    assert chosen(svc({"policy": "Cheapest"}), runtime_spec("a", "b"), classes) == "b"  # hourly first
    classes = {"a": klass("a", cost={"perMillionTokens": "3"}), "b": klass("b", cost={"perMillionTokens": "2"}),
               "c": klass("c", cost={"tier": "low"})}
    assert chosen(svc({"policy": "Cheapest"}), runtime_spec("a", "b", "c"), classes) == "b"
    classes = {"a": klass("a", cost={"tier": "High"}), "b": klass("b", cost={"tier": "exotic"}),
               "c": klass("c", cost={"tier": "medium"})}
    assert chosen(svc({"policy": "Cheapest"}), runtime_spec("a", "b", "c"), classes) == "b"  # unknown = medium
    assert chosen(svc({"policy": "Cheapest"}), runtime_spec("x"), {"x": klass("x")}) is None


def test_ties_go_to_the_runtimes_first_class() -> None:
    twins = {"a": klass("a", cost={"perHour": "1"}), "b": klass("b", cost={"perHour": "1.0"})}
    for policy in ("Cheapest", "BestFit", "MostCapable", "FirstAvailable"):
        assert chosen(svc({"policy": policy}), runtime_spec("b", "a"), twins) == "b"
        assert chosen(svc({"policy": policy}), runtime_spec("a", "b"), twins) == "a"


def test_best_fit_without_constraints_picks_instead_of_failing() -> None:
    assert chosen(svc({"policy": "BestFit"}), runtime_spec("nvidia-h200", "nvidia-h100"), GUIDE) == "nvidia-h200"


def test_best_fit_weighs_memory_fit_over_compute() -> None:
    classes = {
        "big": klass("big", memory="160Gi", performance={"fp16Tflops": 1000}),
        "fit": klass("fit", memory="48Gi", performance={"fp16Tflops": 100}),
    }
    isvc = svc({"policy": "BestFit", "constraints": {"minMemory": 40, "minComputePerformanceTFLOPS": 500}})
    assert chosen(isvc, runtime_spec("big", "fit"), classes) == "fit"
    # Preferred precisions: each fallback halves the compute score.
    classes = {
        "fp8": klass("fp8", performance={"int8Tops": 100}),
        "fp16": klass("fp16", performance={"fp16Tflops": 100}),
    }
    isvc = svc({"policy": "BestFit", "constraints": {"preferredPrecisions": ["fp8", "fp16"]}})
    assert chosen(isvc, runtime_spec("fp16", "fp8"), classes) == "fp8"


def test_most_capable_weighs_memory_then_bandwidth_then_tflops() -> None:
    classes = {
        "fast": klass("fast", memory="80Gi", bandwidth="3000", performance={"fp16Tflops": 2000}),
        "roomy": klass("roomy", memory="192Gi", bandwidth="2000", performance={"fp16Tflops": 500}),
    }
    assert chosen(svc({"policy": "MostCapable"}), runtime_spec("fast", "roomy"), classes) == "roomy"


def test_an_unknown_policy_gives_no_class() -> None:
    assert chosen(svc({"policy": "Random"}), runtime_spec("nvidia-h100"), GUIDE) is None


def test_uses_class() -> None:
    spec = runtime_spec("nvidia-h100")

    def named(selector: Obj | None = None) -> Obj:
        obj = svc(selector)
        obj["spec"]["runtime"] = {"name": "vllm-llama"}
        return obj

    assert not acc.uses_class(named(), "nvidia-h100", [spec])
    assert acc.uses_class(named({"policy": "Cheapest"}), "nvidia-h100", [spec])
    assert not acc.uses_class(named({"policy": "Cheapest"}), "nvidia-h200", [spec])
    assert acc.uses_class(named({"acceleratorClass": "nvidia-h200"}), "nvidia-h200", [spec])
    assert acc.uses_class(named({"policy": "Cheapest"}), "nvidia-h200", [])  # runtime not cached
    assert acc.uses_class(svc({"policy": "Cheapest"}), "nvidia-h200", [spec])  # auto-selected runtime


# -- application -------------------------------------------------------------------------------------


def _runtime(*classes: str, **engine: Any) -> Obj:
    rt = builders.runtime()
    rt["spec"]["acceleratorRequirements"] = {"acceleratorClasses": list(classes)}
    rt["spec"]["engineConfig"].update(engine)
    return rt


GPU_CLASS = klass(
    "nvidia-h100",
    product="NVIDIA-H100-80GB-HBM3",
    resources=[{"name": "nvidia.com/gpu", "quantity": "8"}, {"name": "example.com/rdma"}],
    affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}},
)


def _engine(isvc: Obj, rt: Obj, cls: Obj | None = GPU_CLASS, config: InferenceServiceConfig = CONFIG,
            **options: Any) -> Any:
    accel = {"engine": cls} if cls is not None else None
    return build_plans(isvc, rt, MODEL, config, accelerators=accel, **options)[0]


def test_no_class_renders_exactly_as_before() -> None:
    isvc, rt = builders.isvc(), builders.runtime()
    assert build_plans(isvc, rt, MODEL, CONFIG) == build_plans(isvc, rt, MODEL, CONFIG, accelerators={})


def test_the_class_sets_node_selector_resources_and_node_affinity() -> None:
    plan = _engine(builders.isvc(), _runtime("nvidia-h100"))
    pod = plan.pod_spec
    assert pod["nodeSelector"] == {READY: "Ready", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    gpu = {"nvidia.com/gpu": "8", "example.com/rdma": "1"}
    assert main_container(pod)["resources"] == {"requests": gpu, "limits": gpu}
    assert pod["affinity"] == GPU_CLASS["spec"]["discovery"]["affinity"]


def test_class_resources_override_the_runtimes_but_not_the_services_runner() -> None:
    runner = {"name": "ome-container", "image": "x",
              "resources": {"requests": {"cpu": "4", "nvidia.com/gpu": "4"}, "limits": {"nvidia.com/gpu": "4"}}}
    plan = _engine(builders.isvc(), _runtime("nvidia-h100", runner=runner))
    assert main_container(plan.pod_spec)["resources"] == {
        "requests": {"cpu": "4", "nvidia.com/gpu": "8", "example.com/rdma": "1"},
        "limits": {"nvidia.com/gpu": "8", "example.com/rdma": "1"},
    }
    own = builders.isvc(engine={"runner": {"resources": {"limits": {"nvidia.com/gpu": "2"}}}})
    plan = _engine(own, _runtime("nvidia-h100", runner=runner))
    assert main_container(plan.pod_spec)["resources"]["limits"] == {"nvidia.com/gpu": "2"}


def test_node_selector_precedence_runtime_then_class_then_component() -> None:
    rt = _runtime("nvidia-h100", nodeSelector={"nvidia.com/gpu.product": "runtime", "pool": "gpu"})
    plan = _engine(builders.isvc(), rt)
    assert plan.pod_spec["nodeSelector"] == {
        READY: "Ready", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "pool": "gpu",
    }
    own = builders.isvc(engine={"nodeSelector": {"nvidia.com/gpu.product": "mine"}})
    assert _engine(own, rt).pod_spec["nodeSelector"]["nvidia.com/gpu.product"] == "mine"


def test_node_affinity_yields_to_the_components_affinity_or_the_runtimes_node_affinity() -> None:
    pod_affinity = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}
    plan = _engine(builders.isvc(), _runtime("nvidia-h100", affinity=copy.deepcopy(pod_affinity)))
    assert plan.pod_spec["affinity"] == {**pod_affinity, **GPU_CLASS["spec"]["discovery"]["affinity"]}
    runtime_node = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}
    plan = _engine(builders.isvc(), _runtime("nvidia-h100", affinity=runtime_node))
    assert plan.pod_spec["affinity"] == runtime_node
    own = builders.isvc(engine={"affinity": pod_affinity})
    assert _engine(own, _runtime("nvidia-h100")).pod_spec["affinity"] == pod_affinity


def test_leader_and_worker_pods_get_the_class_too() -> None:
    isvc = builders.isvc(engine={"leader": {}, "worker": {"size": 2}})
    plan = _engine(isvc, _runtime("nvidia-h100"))
    for pod in (plan.leader_pod_spec, plan.worker_pod_spec):
        assert pod["nodeSelector"]["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
        assert main_container(pod)["resources"]["limits"]["nvidia.com/gpu"] == "8"


def test_worker_runner_resources_keep_their_own() -> None:
    isvc = builders.isvc(engine={"leader": {}, "worker": {"size": 1, "runner": {
        "name": "ome-container", "resources": {"limits": {"nvidia.com/gpu": "1"}}}}})
    plan = _engine(isvc, _runtime("nvidia-h100"))
    assert main_container(plan.worker_pod_spec)["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert main_container(plan.leader_pod_spec)["resources"]["limits"]["nvidia.com/gpu"] == "8"


def test_the_router_is_never_changed() -> None:
    isvc = builders.isvc(router={"runner": {"name": "router", "image": "r"}})
    rt = _runtime("nvidia-h100")
    plain = build_plans(isvc, rt, MODEL, CONFIG)
    with_class = build_plans(isvc, rt, MODEL, CONFIG, accelerators={"engine": GPU_CLASS, "router": GPU_CLASS})
    assert with_class[1] == plain[1]


def test_merged_fine_tuned_weights_get_resources_but_no_class_node_selector() -> None:
    isvc = builders.isvc()
    isvc["spec"]["model"]["fineTunedWeights"] = ["finance"]
    ftw = {"metadata": {"name": "finance"}, "spec": {
        "configuration": {"merged_weights": True}, "hyperParameters": {"strategy": "lora"},
        "storage": {"storageUri": "oci://n/ns/b/bucket/o/finance"}}}
    tuned = fine_tuned.resolve(isvc, ftw, builders.model())
    entry = ('{"image": "agent:v1", "authType": "InstancePrincipal", "compartmentId": "ocid1.c",'
             ' "region": "r", "memoryRequest": "1Gi", "memoryLimit": "1Gi", "cpuRequest": "1", "cpuLimit": "1"}')
    plan = _engine(isvc, _runtime("nvidia-h100"), config=parse({"fineTunedAdapter": entry}), fine_tuned=tuned)
    assert "nvidia.com/gpu.product" not in (plan.pod_spec.get("nodeSelector") or {})
    assert main_container(plan.pod_spec)["resources"]["limits"]["nvidia.com/gpu"] == "8"
