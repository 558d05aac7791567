"""Runtime resolution: named lookup order, compatibility reasons, auto-selection ranking and messages."""

from __future__ import annotations

import pytest

from ome.api import resources
from ome.resolution import models, runtimes
from tests.unit.resolution.fake_reader import FakeReader, entry, isvc, model, runtime

CSR, SR, CBM = resources.CLUSTER_SERVING_RUNTIMES, resources.SERVING_RUNTIMES, resources.CLUSTER_BASE_MODELS


def resolve(reader: FakeReader, svc: dict) -> runtimes.ResolvedRuntime:
    return runtimes.resolve_runtime(reader, svc, models.resolve_model(reader, svc))


# -- versions and sizes -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry_v", "op", "model_v", "ok"),
    [
        ("1.0.0", "Equal", "1.0.0", True),
        ("1.0.0", None, "1.0", True),
        ("v1.0.0", "Equal", "1.0.0", True),
        ("1.8.0", "GreaterThan", "1.7.0", True),
        ("1.8.0", "GreaterThan", "1.8.0", False),
        ("1.8.0", "GreaterThanOrEqual", "1.8.0", True),
        ("4.50.0", "GreaterThanOrEqual", "4.51.0", False),
        ("1.8.0-dev", "GreaterThan", "1.8.0-dev", True),
        ("4.45.0.dev0", "GreaterThanOrEqual", "4.44.0", False),
        ("4.50.0", "GreaterThanOrEqual", "4.45.0.dev0", False),
        ("1.8", "GreaterThan", "1.7.0", False),
        ("1.08.0", "Equal", "1.08.0", False),
        ("1.0.0-", "Equal", "1.0.0-", False),
        ("V1.0.0", "Equal", "V1.0.0", False),
        ("1.0", "LessThan", "1.0.0", False),
    ],
)
def test_version_operators_follow_the_documented_table(
    entry_v: str, op: str | None, model_v: str, ok: bool
) -> None:
    assert runtimes.compare_versions(entry_v, op, model_v) is ok


@pytest.mark.parametrize(
    ("text", "value"),
    [("3.21B", 3.21e9), ("500M", 5e8), ("1.5T", 1.5e12), ("999", 999.0), ("4b", 0.0), ("", 0.0)],
)
def test_sizes_parse_with_uppercase_suffixes_only(text: str, value: float) -> None:
    assert runtimes.parse_size(text) == pytest.approx(value)


@pytest.mark.parametrize(
    ("low", "high", "size", "reason"),
    [
        ("2B", "4B", "3.21B", ""),
        ("2B", "4B", "4B", ""),
        ("500M", "2B", "3.21B", "model size 3.21B is outside supported range [500M, 2B]"),
        ("1B", "4B", "1500M", ""),
        ("70B", None, "13B", "model size 13B is outside supported range [70B, inf)"),
        (None, "13B", "3.21B", ""),
        ("2B", "4B", None, ""),
    ],
)
def test_size_range_bounds_are_inclusive_and_optional(
    low: str | None, high: str | None, size: str | None, reason: str
) -> None:
    rng = {k: v for k, v in (("min", low), ("max", high)) if v}
    ok, why = runtimes.supports(runtime("r", modelSizeRange=rng), model("m", size=size))
    assert (ok, why) == (reason == "", reason)


# -- compatibility reasons --------------------------------------------------------------------------


def test_reason_lists_every_difference_of_each_entry() -> None:
    rt = runtime("r", entry(arch="MistralForCausalLM", fw_version="4.36.0"))
    ok, why = runtimes.supports(rt, model("m", arch="Qwen2ForCausalLM", fw_version="4.40.1"))
    assert not ok
    assert why == (
        "model format 'mt:safetensors:1.0.0:Qwen2ForCausalLM:transformers:4.40.1' not in supported formats: "
        "architecture mismatch (model=Qwen2ForCausalLM, runtime=MistralForCausalLM), "
        "framework version mismatch (model=4.40.1, runtime=4.36.0)"
    )


def test_one_sided_values_never_match() -> None:
    _, why = runtimes.supports(runtime("r", entry(arch=None, fmt_version=None)), model("m"))
    assert "model has architecture LlamaForCausalLM but runtime has no architecture requirement" in why
    assert "model has format version but runtime has no version requirement" in why


def test_checks_run_in_documented_order() -> None:
    disabled = runtime("r", entry(fmt="gguf"), disabled=True)
    assert runtimes.supports(disabled, model("m")) == (False, "runtime is disabled")
    svc = isvc(acceleratorSelector={"acceleratorClass": "h100"})
    assert (
        runtimes.supports(runtime("r"), model("m"), isvc=svc)[1]
        == "runtime does not support the required accelerator class"
    )
    listed = runtime("r", acceleratorRequirements={"acceleratorClasses": ["h100", "a100"]})
    assert runtimes.supports(listed, model("m"), isvc=svc) == (True, "")


def test_deployment_mode_mismatch_is_a_reason() -> None:
    rt = runtime("r", engineConfig={"annotations": {"ome.io/deploymentMode": "MultiNode"}})
    ok, why = runtimes.supports(rt, model("m"), isvc=isvc(deploymentMode="OMENative", engine={}))
    assert (
        why
        == "runtime engine deployment mode MultiNode does not match requested engine deployment mode OMENative"
    )
    assert runtimes.supports(rt, model("m"), isvc=isvc(engine={}))[0]  # the service declares no mode


# -- named runtimes ---------------------------------------------------------------------------------


def test_cluster_kind_looks_at_cluster_scope_first() -> None:
    reader = FakeReader((CBM, model("m")), (CSR, runtime("rt")), (SR, runtime("rt", namespace="demo")))
    found = resolve(
        reader, isvc(model={"name": "m"}, runtime={"name": "rt", "kind": "ClusterServingRuntime"})
    )
    assert (found.kind, found.auto_selected, found.warnings) == ("ClusterServingRuntime", False, [])


def test_cluster_kind_falls_back_to_the_namespace() -> None:
    reader = FakeReader((CBM, model("m")), (SR, runtime("rt", namespace="demo")))
    assert (
        resolve(
            reader, isvc(model={"name": "m"}, runtime={"name": "rt", "kind": "ClusterServingRuntime"})
        ).kind
        == "ServingRuntime"
    )


def test_no_kind_looks_in_the_namespace_first() -> None:
    reader = FakeReader((CBM, model("m")), (CSR, runtime("rt")), (SR, runtime("rt", namespace="demo")))
    assert resolve(reader, isvc(model={"name": "m"}, runtime={"name": "rt"})).kind == "ServingRuntime"


def test_serving_runtime_kind_never_reads_cluster_scope() -> None:
    reader = FakeReader((CBM, model("m")), (CSR, runtime("rt")))
    with pytest.raises(runtimes.RuntimeNotFound) as raised:
        resolve(reader, isvc(model={"name": "m"}, runtime={"name": "rt", "kind": "ServingRuntime"}))
    assert raised.value.message == "runtime rt not found in namespace demo"


def test_missing_runtime_message_names_both_scopes() -> None:
    with pytest.raises(runtimes.RuntimeNotFound) as raised:
        resolve(FakeReader((CBM, model("m"))), isvc(model={"name": "m"}, runtime={"name": "rt"}))
    assert raised.value.message == "runtime rt not found in namespace demo or at cluster scope"


def test_disabled_named_runtime_is_an_error() -> None:
    reader = FakeReader((CBM, model("m")), (CSR, runtime("rt", disabled=True)))
    with pytest.raises(runtimes.RuntimeDisabled, match="cluster-scoped runtime rt is disabled"):
        resolve(reader, isvc(model={"name": "m"}, runtime={"name": "rt"}))


def test_named_runtime_without_declared_support_warns() -> None:
    reader = FakeReader(
        (CBM, model("m", fw_version="4.46.0")), (CSR, runtime("rt", entry(fw_version="4.45.0.dev0")))
    )
    found = resolve(reader, isvc(model={"name": "m"}, runtime={"name": "rt"}))
    assert found.warnings == [
        'runtime "rt" does not declare support for model "m" (runtime rt does not support model safetensors: '
        "model format 'mt:safetensors:1.0.0:LlamaForCausalLM:transformers:4.46.0' not in supported formats: "
        "framework version mismatch (model=4.46.0, runtime=4.45.0.dev0)); proceeding because the runtime was "
        "named explicitly"
    ]


def test_named_runtime_for_a_model_without_format_is_invalid() -> None:
    reader = FakeReader((CBM, model("m", fmt="")), (CSR, runtime("rt")))
    with pytest.raises(runtimes.InvalidModel, match="model format name is required"):
        resolve(reader, isvc(model={"name": "m"}, runtime={"name": "rt"}))


# -- auto-selection ---------------------------------------------------------------------------------


def test_worked_example_ranking() -> None:
    """runtime-selection-scoring's worked example: namespaced first, then score, distance and name."""
    m = model("llama", size="3.21B")
    team = runtime("team-llama", namespace="demo")
    vllm = runtime(
        "vllm-llama", entry(priority=2, modelFormat={"name": "safetensors", "version": "1.0.0", "weight": 2})
    )
    small = runtime("srt-llama-small", entry(priority=3), modelSizeRange={"min": "1B", "max": "8B"})
    large = runtime("srt-llama-large", entry(priority=3), modelSizeRange={"min": "1B", "max": "70B"})
    reader = FakeReader((CBM, m), (SR, team), (CSR, vllm), (CSR, small), (CSR, large))
    picked = resolve(reader, isvc(name="x", model={"name": "llama"}))
    assert (picked.name, picked.auto_selected) == ("team-llama", True)
    assert picked.warnings == ["Runtime team-llama will be auto-selected for model llama"]
    del reader.objects[(SR.name, "demo", "team-llama")]
    assert resolve(reader, isvc(model={"name": "llama"})).name == "vllm-llama"
    del reader.objects[(CSR.name, "", "vllm-llama")]
    assert resolve(reader, isvc(model={"name": "llama"})).name == "srt-llama-small"


def test_name_breaks_the_last_tie() -> None:
    reader = FakeReader((CBM, model("m")), (CSR, runtime("b-rt")), (CSR, runtime("a-rt")))
    assert resolve(reader, isvc(model={"name": "m"})).name == "a-rt"


@pytest.mark.parametrize(("weight", "score"), [(1, 2.0), (0, 11.0), (3, 4.0), (-1, 0.0)])
def test_score_weights_with_zero_counting_as_ten(weight: int, score: float) -> None:
    rt = runtime("r", entry(modelFormat={"name": "safetensors", "version": "1.0.0", "weight": weight}))
    assert runtimes.score(rt, model("m")) == score


def test_unset_auto_select_never_qualifies() -> None:
    reader = FakeReader((CBM, model("m")), (CSR, runtime("rt", entry(auto=None))))
    with pytest.raises(runtimes.NoSupportingRuntime) as raised:
        resolve(reader, isvc(model={"name": "m"}))
    assert raised.value.detail == (
        "no runtime found to support model safetensors with format safetensors in namespace demo. "
        "Checked 1 runtimes (0 namespace-scoped, 1 cluster-scoped)"
    )


def test_no_supporting_runtime_lists_exclusions() -> None:
    reader = FakeReader((CBM, model("m")), (CSR, runtime("rt", entry(fmt="gguf"))))
    with pytest.raises(runtimes.NoSupportingRuntime) as raised:
        resolve(reader, isvc(model={"name": "m"}))
    assert raised.value.message.startswith("no supporting runtime found for model m")
    assert raised.value.detail.endswith(
        "Excluded runtimes: rt (model format 'mt:safetensors:1.0.0:LlamaForCausalLM:transformers:4.45.0' not in "
        "supported formats: format name mismatch (model=safetensors, runtime=gguf))"
    )


def test_no_runtimes_at_all_ends_after_the_namespace() -> None:
    with pytest.raises(runtimes.NoSupportingRuntime) as raised:
        resolve(FakeReader((CBM, model("m"))), isvc(model={"name": "m"}))
    assert (
        raised.value.detail
        == "no runtime found to support model safetensors with format safetensors in namespace demo"
    )


def test_runtime_with_conflicting_mode_is_skipped() -> None:
    multinode = runtime("a-multinode", engineConfig={"annotations": {"ome.io/deploymentMode": "MultiNode"}})
    reader = FakeReader((CBM, model("m")), (CSR, multinode), (CSR, runtime("z-plain")))
    assert resolve(reader, isvc(model={"name": "m"}, deploymentMode="OMENative", engine={})).name == "z-plain"


def test_model_without_format_cannot_be_matched() -> None:
    reader = FakeReader((CBM, model("m", fmt="")), (CSR, runtime("rt")))
    with pytest.raises(runtimes.NoSupportingRuntime, match="model format name is required"):
        resolve(reader, isvc(model={"name": "m"}))


def test_all_errors_are_resolution_errors() -> None:
    for cls in (
        runtimes.RuntimeNotFound,
        runtimes.RuntimeDisabled,
        runtimes.InvalidModel,
        models.ModelNotFound,
    ):
        assert issubclass(cls, models.ResolutionError)
    assert issubclass(runtimes.NoSupportingRuntime, models.ResolutionError)
