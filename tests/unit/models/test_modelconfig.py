from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ome.models import modelconfig, scan
from tests.support.fake_hub import safetensors_bytes

FIXTURES = Path(__file__).parent / "fixtures"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return data


@pytest.mark.parametrize(
    ("fixture", "arch", "size", "context", "caps"),
    [
        ("llama-3.1-8b-instruct.json", "LlamaForCausalLM", "8.03B", 131072, ("TEXT_TO_TEXT",)),
        ("qwen2.5-7b-instruct.json", "Qwen2ForCausalLM", "7.62B", 32768, ("TEXT_TO_TEXT",)),
        ("deepseek-v3.json", "DeepseekV3ForCausalLM", "671.03B", 163840, ("TEXT_TO_TEXT",)),
        ("qwen2-vl-7b-instruct.json", "Qwen2VLForConditionalGeneration", "7.62B", 32768, ("IMAGE_TEXT_TO_TEXT",)),
        ("llava-v1.6-mistral-7b.json", "LlavaNextForConditionalGeneration", "7.24B", 32768,
         ("IMAGE_TEXT_TO_TEXT",)),
    ],
    ids=["llama", "qwen", "deepseek-moe", "qwen-vl", "llava-text-config"],
)
def test_real_world_configs_parse(fixture: str, arch: str, size: str, context: int, caps: tuple[str, ...]) -> None:
    cfg = modelconfig.parse_config(load(fixture))
    assert (cfg.architecture, cfg.parameter_size, cfg.max_tokens, cfg.capabilities) == (arch, size, context, caps)
    assert cfg.format == ("safetensors", "1.0.0")


def test_llama_estimate_is_exact() -> None:
    assert modelconfig.estimate_parameters(load("llama-3.1-8b-instruct.json")) == 8_030_261_248


def test_qwen_estimate_counts_qkv_bias() -> None:
    assert modelconfig.estimate_parameters(load("qwen2.5-7b-instruct.json")) == 7_615_616_512


def test_deepseek_moe_counts_all_experts_and_is_fp8() -> None:
    cfg = modelconfig.parse_config(load("deepseek-v3.json"))
    assert 665e9 < cfg.parameter_count < 676e9  # published: 671B without the MTP layer
    assert cfg.quantization == "fp8"


def test_safetensors_count_wins_over_the_estimate() -> None:
    cfg = modelconfig.parse_config(load("qwen2-vl-7b-instruct.json"), parameter_count=8_291_375_616)
    assert cfg.parameter_size == "8.29B"


def test_to_json_uses_configmap_field_names() -> None:
    out = modelconfig.parse_config(load("llama-3.1-8b-instruct.json")).to_json()
    assert out["modelFramework"] == {"name": "transformers", "version": "4.42.3"}
    assert out["modelFormat"] == {"name": "safetensors", "version": "1.0.0"}
    assert out["modelParameterSize"] == "8.03B" and out["maxTokens"] == 131072
    assert "quantization" not in out  # empty values are left out
    assert out["decodedModelConfiguration"]["torch_dtype"] == "bfloat16"


@pytest.mark.parametrize(
    ("count", "text"),
    [(7_000_000_000, "7B"), (1_235_814_400, "1.24B"), (405_000_000_000, "405B"), (560_000_000, "560M"),
     (1_500_000_000, "1.5B"), (2_000_000_000_000, "2T"), (999, "999")],
)
def test_parameter_size_format(count: int, text: str) -> None:
    assert modelconfig.format_parameter_size(count) == text


@pytest.mark.parametrize(
    ("config", "quant", "expected"),
    [
        ({"quantization_config": {"quant_method": "gptq", "bits": 4}}, None, "int4"),
        ({"quantization_config": {"quant_method": "awq", "bits": 4}}, None, "int4"),
        ({"quantization_config": {"quant_method": "gptq", "bits": 8}}, None, ""),
        ({"quantization_config": {"quant_method": "fbgemm_fp8"}}, None, "fbgemm_fp8"),
        ({"quantization_config": {"quant_method": "compressed-tensors"}}, None, "compressed-tensors"),
        ({}, {"quantization": {"quant_algo": "NVFP4"}}, "nvfp4"),
        ({}, {"quantization": {"quant_algo": "FP8"}}, "fp8"),
        ({}, None, ""),
    ],
    ids=["gptq4", "awq4", "gptq8", "fbgemm", "compressed", "modelopt-nvfp4", "modelopt-fp8", "none"],
)
def test_quantization(config: dict[str, Any], quant: dict[str, Any] | None, expected: str) -> None:
    assert modelconfig.quantization(config, quant) == expected


@pytest.mark.parametrize(
    ("model_type", "arch", "vision", "expected"),
    [
        ("bert", "BertModel", False, ("EMBEDDING",)),
        ("mistral", "MistralModel", False, ("EMBEDDING",)),
        ("whisper", "WhisperForConditionalGeneration", False, ("AUDIO_TO_TEXT",)),
        ("qwen2_5_omni", "Qwen2_5OmniModel", True,
         ("IMAGE_TEXT_TO_TEXT", "TEXT_TO_AUDIO", "IMAGE_TEXT_TO_AUDIO", "VIDEO_TEXT_TO_AUDIO", "AUDIO_TO_TEXT",
          "AUDIO_TO_AUDIO")),
        ("nemotronh_nano", "X", False, ("IMAGE_TEXT_TO_TEXT", "TEXT_TO_TEXT", "AUDIO_TO_TEXT")),
        ("llama", "LlamaForCausalLM", False, ("TEXT_TO_TEXT",)),
    ],
)
def test_capabilities(model_type: str, arch: str, vision: bool, expected: tuple[str, ...]) -> None:
    embedding = modelconfig._is_embedding(model_type, arch)
    assert modelconfig.capabilities(model_type, arch, has_vision=vision, is_embedding=embedding) == expected


def test_diffusers_pipeline() -> None:
    cfg = modelconfig.parse_model_index({"_class_name": "FluxPipeline", "_diffusers_version": "0.30.0"})
    assert cfg.format == ("diffusers", "0.30.0") and cfg.capabilities == ("TEXT_TO_IMAGE",)


def test_scan_counts_safetensors_and_finds_nested_config(tmp_path: Path) -> None:
    nested = tmp_path / "model"
    nested.mkdir()
    (nested / "config.json").write_text((FIXTURES / "llama-3.1-8b-instruct.json").read_text())
    (nested / "model-00001.safetensors").write_bytes(safetensors_bytes({"a": [4, 8], "b": [3]}))
    (nested / "model-00002.safetensors").write_bytes(safetensors_bytes({"c": [10]}))
    cfg = scan.scan(tmp_path)
    assert cfg.parameter_count == 45 and cfg.architecture == "LlamaForCausalLM"
    assert cfg.summary["model_size_bytes"] > 0


def test_scan_without_config_says_so(tmp_path: Path) -> None:
    with pytest.raises(scan.ConfigNotFound, match="no model_index.json or config.json found in"):
        scan.scan(tmp_path)


def test_corrupt_safetensors_header_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "x.safetensors"
    bad.write_bytes(b"\xff" * 8)
    with pytest.raises(scan.SafetensorsError):
        scan.safetensors_header(bad)
