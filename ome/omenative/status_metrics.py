"""The InferenceReplica status-encoding series, events and messages (change-the-status-encoding.md).

Series (encoding labels `dense_v1` / `columnar_v2`): `ome_omenative_ir_status_conversions_total{from,to}`,
`ome_omenative_ir_status_writes_total{encoding,result}` (`result` is `success`, `rejected` when the
apiserver refuses the write as too large, or `error`),
`ome_omenative_ir_status_bytes{namespace,name,component,encoding}` (the size of the last write) and
`ome_omenative_ir_status_codec_errors_total{reason}`. Events:
`InstanceStatusConverted` (Normal), `StatusSizeExceeded` and `InstanceStatusDecodeFailed` (Warning).
Only the leader writes status, so only the leader records them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

import orjson
from prometheus_client import Counter, Gauge

Encoding = Literal["ColumnarV2", "DenseV1"]
Result = Literal["success", "rejected", "error"]

CONVERTED: Final = "InstanceStatusConverted"
SIZE_EXCEEDED: Final = "StatusSizeExceeded"
DECODE_FAILED: Final = "InstanceStatusDecodeFailed"
CARDINALITY_LIMIT: Final = "cardinality_limit"

CONVERSIONS: Final = Counter("ome_omenative_ir_status_conversions_total",
                             "InferenceReplica status writes that changed the per-Instance encoding.",
                             ["from", "to"])
WRITES: Final = Counter("ome_omenative_ir_status_writes_total",
                        "InferenceReplica status writes by encoding and result.", ["encoding", "result"])
BYTES: Final = Gauge("ome_omenative_ir_status_bytes", "Size of an InferenceReplica's last status write.",
                     ["namespace", "name", "component", "encoding"])
CODEC_ERRORS: Final = Counter("ome_omenative_ir_status_codec_errors_total",
                              "Per-Instance status that failed to encode or decode.", ["reason"])


def label(encoding: Encoding) -> str:
    return "columnar_v2" if encoding == "ColumnarV2" else "dense_v1"


def encoding_of(status: Mapping[str, Any]) -> Encoding:
    return "ColumnarV2" if status.get("instanceStatusEncoding") == "ColumnarV2" else "DenseV1"


def has_rows(status: Mapping[str, Any]) -> bool:
    return bool(status.get("instanceStatuses") or status.get("instanceStatusColumns"))


def conversion(previous: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[Encoding, Encoding] | None:
    """(from, to) when a write re-stores existing rows in the other encoding; None otherwise."""
    if not has_rows(previous) or not has_rows(new):
        return None
    before, after = encoding_of(previous), encoding_of(new)
    return (before, after) if before != after else None


def size(status: Mapping[str, Any]) -> int:
    return len(orjson.dumps(status))  # the bytes the client sends


def record_write(
    replica: Mapping[str, Any], previous: Mapping[str, Any], new: Mapping[str, Any], result: Result
) -> tuple[Encoding, Encoding] | None:
    """Count one status write of `replica` replacing `previous` (read before the write: a cache may hand
    out the object the write updates); returns the conversion a successful write made, for the
    InstanceStatusConverted event."""
    meta = replica.get("metadata") or {}
    encoding = encoding_of(new)
    WRITES.labels(label(encoding), result).inc()
    component = (replica.get("spec") or {}).get("component", "")
    BYTES.labels(meta.get("namespace", ""), meta.get("name", ""), component, label(encoding)).set(size(new))
    if result != "success":
        return None
    found = conversion(previous, new)
    if found is not None:
        CONVERSIONS.labels(label(found[0]), label(found[1])).inc()
    return found


def converted_message(replica: Mapping[str, Any], found: tuple[Encoding, Encoding]) -> str:
    meta = replica.get("metadata") or {}
    return (f"InferenceReplica {meta.get('namespace')}/{meta.get('name')} per-Instance status was rewritten "
            f"from {found[0]} to {found[1]}")


def size_exceeded_message(replica: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    meta = replica.get("metadata") or {}
    return (f"InferenceReplica {meta.get('namespace')}/{meta.get('name')} status write of {size(new)} bytes "
            f"({encoding_of(new)}) was rejected as too large")


def decode_failed_message(replica: Mapping[str, Any], reason: str) -> str:
    meta = replica.get("metadata") or {}
    return (f"InferenceReplica {meta.get('namespace')}/{meta.get('name')} per-Instance status cannot be "
            f"decoded ({reason})")
