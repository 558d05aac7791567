"""What a model is, from its `config.json` (or a diffusers `model_index.json`): pure parsing, no file I/O.

The result, `ModelConfig`, is what the agent publishes in its node's status ConfigMap and what the node
agent reconciler copies into the model's empty spec fields: type, architecture, parameter size, context
length, capabilities, format, framework and quantization, plus a `modelConfiguration` summary.

Parameter counts come from the safetensors headers when the caller has them (exact); otherwise they are
estimated from the config's dimensions (dense, grouped-query and multi-head latent attention, Mixtral,
Qwen and DeepSeek mixtures of experts), which lands within a fraction of a percent for common models.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

Json = Mapping[str, Any]

SAFETENSORS: Final = ("safetensors", "1.0.0")
TEXT_TO_TEXT: Final = "TEXT_TO_TEXT"
IMAGE_TEXT_TO_TEXT: Final = "IMAGE_TEXT_TO_TEXT"
AUDIO_TO_TEXT: Final = "AUDIO_TO_TEXT"
EMBEDDING: Final = "EMBEDDING"
_OMNI_CAPABILITIES: Final = ("TEXT_TO_AUDIO", "IMAGE_TEXT_TO_AUDIO", "VIDEO_TEXT_TO_AUDIO", AUDIO_TO_TEXT,
                             "AUDIO_TO_AUDIO")
_AUDIO_MARKERS: Final = ("whisper", "wav2vec2", "hubert", "fortc", "forspeechtotext")
_CONTEXT_KEYS: Final = ("max_position_embeddings", "max_sequence_length", "seq_length", "n_positions",
                        "model_max_length")
_SUFFIXES: Final = ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K"))


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """One model's metadata; `to_json` uses the per-node ConfigMap's field names."""

    model_type: str = ""
    architecture: str = ""
    parameter_count: int = 0
    max_tokens: int = 0
    capabilities: tuple[str, ...] = ()
    format: tuple[str, str] | None = None
    framework: tuple[str, str | None] | None = None
    quantization: str = ""
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def parameter_size(self) -> str:
        return format_parameter_size(self.parameter_count) if self.parameter_count else ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "modelType": self.model_type, "modelArchitecture": self.architecture,
            "modelParameterSize": self.parameter_size, "maxTokens": self.max_tokens,
            "modelCapabilities": list(self.capabilities), "quantization": self.quantization,
            "decodedModelConfiguration": self.summary,
        }
        if self.format:
            out["modelFormat"] = {"name": self.format[0], "version": self.format[1]}
        if self.framework:
            out["modelFramework"] = {"name": self.framework[0], **_opt("version", self.framework[1])}
        return {k: v for k, v in out.items() if v not in ("", 0, [], {}, None)}


def _opt(key: str, value: str | None) -> dict[str, str]:
    return {key: value} if value else {}


def format_parameter_size(count: int) -> str:
    """`7B`, `1.24B`, `405B`, `560M`: whole numbers plain, others with up to two decimals."""
    for scale, suffix in _SUFFIXES:
        if count >= scale:
            text = f"{count / scale:.2f}".rstrip("0").rstrip(".")
            return f"{text}{suffix}"
    return str(count)


def parse_config(config: Json, *, parameter_count: int | None = None, size_bytes: int | None = None,
                 quant_config: Json | None = None) -> ModelConfig:
    """Metadata of a transformers model from its `config.json` (and `hf_quant_config.json`, if any)."""
    text = _text_config(config)
    model_type = str(config.get("model_type") or "")
    architecture = _first(config.get("architectures")) or ""
    has_vision = _has_vision(config)
    is_embedding = _is_embedding(model_type, architecture)
    count = parameter_count or estimate_parameters(config)
    context = _context_length(config, text)
    transformers_version = config.get("transformers_version") or text.get("transformers_version")
    summary = {
        "model_type": model_type, "architecture": architecture, "context_length": context,
        "parameter_count": count, "has_vision": has_vision, "is_embedding": is_embedding,
        "transformers_version": transformers_version, "torch_dtype": config.get("torch_dtype")
        or config.get("dtype") or text.get("torch_dtype"), "model_size_bytes": size_bytes,
    }
    return ModelConfig(
        model_type=model_type, architecture=architecture, parameter_count=count, max_tokens=context,
        capabilities=capabilities(model_type, architecture, has_vision=has_vision, is_embedding=is_embedding),
        format=SAFETENSORS, framework=("transformers", transformers_version),
        quantization=quantization(config, quant_config),
        summary={k: v for k, v in summary.items() if v is not None},
    )


def parse_model_index(index: Json) -> ModelConfig:
    """Metadata of a diffusers pipeline from its `model_index.json`."""
    architecture = str(index.get("_class_name") or "")
    version = index.get("_diffusers_version")
    return ModelConfig(
        model_type="diffusers", architecture=architecture, capabilities=_diffusion_capabilities(architecture),
        format=("diffusers", version or ""), framework=("diffusers", version),
        summary={"architecture": architecture, "diffusers_version": version},
    )


def capabilities(
    model_type: str, architecture: str, *, has_vision: bool, is_embedding: bool
) -> tuple[str, ...]:
    arch, kind = architecture.lower(), model_type.lower()
    if kind == "nemotronh_nano":
        return (IMAGE_TEXT_TO_TEXT, TEXT_TO_TEXT, AUDIO_TO_TEXT)
    if is_embedding:
        return (EMBEDDING,)
    found: list[str] = []
    if has_vision:
        found.append(IMAGE_TEXT_TO_TEXT)
    if "omni" in arch:
        found.extend(c for c in _OMNI_CAPABILITIES if c not in found)
    elif any(marker in arch or marker in kind for marker in _AUDIO_MARKERS):
        found.append(AUDIO_TO_TEXT)
    return tuple(found) or (TEXT_TO_TEXT,)


def _diffusion_capabilities(architecture: str) -> tuple[str, ...]:
    arch = architecture.lower()
    if any(m in arch for m in ("imageedit", "pix2pix", "img2img", "inpaint")):
        return ("IMAGE_TEXT_TO_IMAGE",)
    if any(m in arch for m in ("texttovideo", "t2v")):
        return ("TEXT_TO_VIDEO",)
    if "video" in arch:
        return ("IMAGE_TEXT_TO_VIDEO",)
    return ("TEXT_TO_IMAGE",)


def quantization(config: Json, quant_config: Json | None = None) -> str:
    """`fp8`, `fbgemm_fp8`, `int4`, `nvfp4`, `mxfp4` or `compressed-tensors`; "" when unquantized."""
    if quant_config:
        algo = str((quant_config.get("quantization") or {}).get("quant_algo") or "").lower()
        if algo:
            return "nvfp4" if "nvfp4" in algo else "int4" if "int4" in algo or "w4a" in algo else \
                "fp8" if "fp8" in algo else ""
    qc = _text_config(config).get("quantization_config") or config.get("quantization_config") or {}
    method = str(qc.get("quant_method") or "").lower()
    if method in ("fp8", "fbgemm_fp8", "mxfp4", "compressed-tensors", "nvfp4"):
        return method
    if method in ("gptq", "awq") and qc.get("bits") == 4:
        return "int4"
    return "int4" if "int4" in method else ""


def _text_config(config: Json) -> Json:
    """Multimodal configs nest the language model's dimensions under `text_config` (or `llm_config`)."""
    for key in ("text_config", "llm_config", "language_config"):
        nested = config.get(key)
        if isinstance(nested, Mapping) and nested.get("hidden_size"):
            return nested
    return config


def _first(value: Any) -> str | None:
    return str(value[0]) if isinstance(value, list) and value else None


def _has_vision(config: Json) -> bool:
    return any(key in config for key in ("vision_config", "vision_tower", "mm_vision_tower", "visual"))


def _is_embedding(model_type: str, architecture: str) -> bool:
    arch, kind = architecture.lower(), model_type.lower()
    if "embedding" in arch or "sentence" in arch or "bert" in kind:
        return True
    return kind == "mistral" and arch == "mistralmodel"


def _context_length(config: Json, text: Json) -> int:
    for source in (text, config):
        for key in _CONTEXT_KEYS:
            value = source.get(key)
            if isinstance(value, int) and value > 0:
                return value
    return 0


def estimate_parameters(config: Json) -> int:
    """Parameters of the language model from its dimensions; 0 when the config lacks them."""
    text = _text_config(config)
    hidden, layers, vocab = _ints(text, "hidden_size", "num_hidden_layers", "vocab_size")
    if not (hidden and layers and vocab):
        return 0
    tied = bool(config.get("tie_word_embeddings", text.get("tie_word_embeddings", False)))
    embeddings = vocab * hidden * (1 if tied else 2)
    blocks = sum(_attention(text) + _mlp(text, i) + 2 * hidden for i in range(layers))
    return embeddings + blocks + hidden


def _ints(c: Json, *keys: str) -> tuple[int, ...]:
    return tuple(int(c.get(k) or 0) for k in keys)


def _attention(c: Json) -> int:
    hidden, heads = int(c["hidden_size"]), int(c.get("num_attention_heads") or 1)
    if c.get("kv_lora_rank"):  # multi-head latent attention (DeepSeek V2/V3)
        rope, nope, v_dim = _ints(c, "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
        q_rank, kv_rank = int(c.get("q_lora_rank") or 0), int(c["kv_lora_rank"])
        q_out = heads * (nope + rope)
        q = hidden * q_rank + q_rank + q_rank * q_out if q_rank else hidden * q_out
        kv = hidden * (kv_rank + rope) + kv_rank + kv_rank * heads * (nope + v_dim)
        return q + kv + heads * v_dim * hidden
    head_dim = int(c.get("head_dim") or hidden // heads)
    kv_heads = int(c.get("num_key_value_heads") or heads)
    has_bias = c.get("attention_bias") or c.get("model_type") == "qwen2"  # Qwen2 has qkv bias, unflagged
    bias = (heads + 2 * kv_heads) * head_dim if has_bias else 0
    return hidden * head_dim * (heads + 2 * kv_heads) + heads * head_dim * hidden + bias


def _mlp(c: Json, layer: int) -> int:
    hidden = int(c["hidden_size"])
    experts = int(c.get("n_routed_experts") or c.get("num_experts") or c.get("num_local_experts") or 0)
    if not experts or not _is_moe_layer(c, layer):
        return 3 * hidden * int(c.get("intermediate_size") or 4 * hidden)
    expert_size = int(c.get("moe_intermediate_size") or c.get("intermediate_size") or 0)
    shared = int(c.get("n_shared_experts") or 0) * expert_size
    shared += int(c.get("shared_expert_intermediate_size") or 0)
    gate = hidden * experts + (hidden if c.get("shared_expert_intermediate_size") else 0)
    return 3 * hidden * (experts * expert_size + shared) + gate


def _is_moe_layer(c: Json, layer: int) -> bool:
    first_dense = int(c.get("first_k_dense_replace") or 0)
    if layer < first_dense or layer in (c.get("mlp_only_layers") or ()):
        return False
    if step := int(c.get("decoder_sparse_step") or 0):  # Qwen: every step-th layer is sparse
        return (layer + 1) % step == 0
    return layer % int(c.get("moe_layer_freq") or 1) == 0  # DeepSeek
