"""The `omenativeStatus` key of the `inferenceservice-config` ConfigMap: how InferenceReplicas store their
per-Instance status (change-the-status-encoding.md). Checked strictly, as v1.3 does: an unknown or
repeated field is an error, and so is a ColumnarV2 block without its decode bound.
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal

from pydantic import Field

from ome.config.section import Section

DEFAULT_MAX_DECODED_INSTANCES: Final = 20000


class OMENativeStatusConfig(Section):
    """omenativeStatus: how InferenceReplicas store per-Instance status (change-the-status-encoding.md)."""

    instance_status_encoding: Literal["DenseV1", "ColumnarV2"] = Field(
        default="ColumnarV2", alias="instanceStatusEncoding")
    max_decoded_instances: int | None = Field(default=DEFAULT_MAX_DECODED_INSTANCES,
                                              alias="maxDecodedInstances")
    """The most rows decoded from one ColumnarV2 InferenceReplica; None: no bound (DenseV1 only)."""

    @property
    def status_encoding(self) -> Literal["DenseV1", "ColumnarV2"]:
        return self.instance_status_encoding

    @property
    def decode_bound(self) -> int:
        """The bound as the startup log prints it: 0 when none is set."""
        return self.max_decoded_instances or 0


def parse_omenative_status(text: str) -> OMENativeStatusConfig:
    """The omenativeStatus block, with v1.3's checks and messages; raises ValueError(message)."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in items:
            if key in seen:
                raise ValueError(f'duplicate field "{key}"')
            seen[key] = value
        return seen

    if not text.strip():
        raise ValueError("expected a JSON object")
    try:
        block, end = json.JSONDecoder(object_pairs_hook=pairs).raw_decode(text.strip())
    except json.JSONDecodeError as exc:
        raise ValueError(f"malformed JSON object: {exc}") from exc
    if end != len(text.strip()):
        raise ValueError("trailing data after the JSON object")
    if not isinstance(block, dict):
        raise ValueError("expected a JSON object")
    for key in block:
        if key not in ("instanceStatusEncoding", "maxDecodedInstances"):
            raise ValueError(f'unknown field "{key}"')
    encoding = block.get("instanceStatusEncoding")
    if encoding is None:
        raise ValueError("instanceStatusEncoding is required")
    if not isinstance(encoding, str):
        raise ValueError("instanceStatusEncoding must be a string")
    if encoding not in ("DenseV1", "ColumnarV2"):
        raise ValueError(f'instanceStatusEncoding "{encoding}" is not supported')
    bound = block.get("maxDecodedInstances")
    if bound is not None:
        if isinstance(bound, bool) or not isinstance(bound, int):
            raise ValueError("maxDecodedInstances must be a positive integer")
        if bound <= 0:
            raise ValueError(f"maxDecodedInstances must be a positive integer, got {bound}")
    elif encoding == "ColumnarV2":
        raise ValueError("maxDecodedInstances is required when instanceStatusEncoding is ColumnarV2")
    return OMENativeStatusConfig.model_validate(
        {"instanceStatusEncoding": encoding, "maxDecodedInstances": bound})
