"""Read a model directory on disk: find its config, count parameters from safetensors headers.

The only file I/O of `ome.models`; parsing itself is in `modelconfig`. A safetensors file starts with an
8-byte little-endian header length and a JSON header naming every tensor's dtype and shape, so exact
parameter counts cost one small read per file, not a read of the weights.
"""

from __future__ import annotations

import json
import struct
from math import prod
from pathlib import Path
from typing import Any, Final

from ome.models import modelconfig
from ome.models.modelconfig import ModelConfig

CONFIG_DIRS: Final = (".", "safetensors", "pytorch_model", "model")
MAX_HEADER_BYTES: Final = 100 * 1024 * 1024  # the format's own limit; larger means a corrupt file


class ConfigNotFound(FileNotFoundError):
    """The directory holds neither `model_index.json` nor `config.json`."""


class SafetensorsError(ValueError):
    """A `.safetensors` file whose header cannot be read."""


def safetensors_header(path: Path) -> dict[str, Any]:
    with path.open("rb") as fh:
        raw = fh.read(8)
        if len(raw) != 8:
            raise SafetensorsError(f"{path}: shorter than a safetensors header")
        (length,) = struct.unpack("<Q", raw)
        if length > MAX_HEADER_BYTES:
            raise SafetensorsError(f"{path}: header length {length} is implausible")
        body = fh.read(length)
    try:
        header: dict[str, Any] = json.loads(body)
    except ValueError as exc:
        raise SafetensorsError(f"{path}: header is not JSON: {exc}") from exc
    return header


def count_parameters(directory: Path) -> tuple[int, int]:
    """(parameters, bytes) over every `*.safetensors` file directly in `directory`."""
    params = size = 0
    for file in sorted(directory.glob("*.safetensors")):
        size += file.stat().st_size
        for name, tensor in safetensors_header(file).items():
            if name != "__metadata__":
                params += prod(tensor.get("shape") or [1])
    return params, size


def find_config(root: Path) -> Path:
    """`model_index.json` (diffusers) first, then `config.json`: in the usual places, then anywhere."""
    for name in ("model_index.json", "config.json"):
        for sub in CONFIG_DIRS:
            if (candidate := root / sub / name).is_file():
                return candidate
        if found := sorted(root.rglob(name)):
            return found[0]
    raise ConfigNotFound(f"no model_index.json or config.json found in {root}")


def scan(root: Path) -> ModelConfig:
    """The metadata of the model stored under `root`."""
    config_path = find_config(root)
    data = _load(config_path)
    if config_path.name == "model_index.json":
        return modelconfig.parse_model_index(data)
    params, size = count_parameters(config_path.parent)
    quant_path = config_path.parent / "hf_quant_config.json"
    return modelconfig.parse_config(
        data, parameter_count=params or None, size_bytes=size or None,
        quant_config=_load(quant_path) if quant_path.is_file() else None,
    )


def _load(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a JSON object")
    return data
