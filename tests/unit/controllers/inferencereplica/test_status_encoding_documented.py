"""Per-Instance status encoding as change-the-status-encoding.md documents it (coverage rows F31, T4):
maxDecodedInstances, the conversion event and series, the decode-failure and size events."""

from __future__ import annotations

import dataclasses
from typing import Any

from prometheus_client import REGISTRY

from ome.api.resources import INFERENCE_REPLICAS
from ome.framework import errors
from ome.omenative import columnar, status
from tests.unit.controllers.inferencereplica.world import World


def _sample(name: str, labels: dict[str, str]) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def _switch(world: World, **settings: Any) -> None:
    world.reconciler._settings = dataclasses.replace(world.reconciler._settings, **settings)  # noqa: SLF001


async def test_moving_to_columnar_converts_records_the_event_and_the_series() -> None:
    """"A conversion also records an `InstanceStatusConverted` event on the InferenceReplica ... Its message
    names the InferenceReplica and says `per-Instance status was rewritten from ColumnarV2 to DenseV1`";
    `ome_omenative_ir_status_conversions_total` | `from`, `to`."""
    world = World(status_encoding="Rows")
    await world.serving(replicas=3)
    before = _sample("ome_omenative_ir_status_conversions_total", {"from": "dense_v1", "to": "columnar_v2"})
    writes = _sample("ome_omenative_ir_status_writes_total", {"encoding": "columnar_v2", "result": "success"})
    _switch(world, status_encoding="ColumnarV2")
    await world.reconcile()
    stored = (world.replica() or {})["status"]
    assert stored["instanceStatusEncoding"] == "ColumnarV2" and "instanceStatuses" not in stored
    assert ("Normal", "InstanceStatusConverted",
            "InferenceReplica ns/chat-engine per-Instance status was rewritten from DenseV1 to ColumnarV2"
            ) in world.recorder.events
    assert _sample("ome_omenative_ir_status_conversions_total",
                   {"from": "dense_v1", "to": "columnar_v2"}) == before + 1
    assert _sample("ome_omenative_ir_status_writes_total",
                   {"encoding": "columnar_v2", "result": "success"}) == writes + 1
    size = _sample("ome_omenative_ir_status_bytes",
                   {"namespace": "ns", "name": "chat-engine", "component": "engine", "encoding": "columnar_v2"})
    assert size > 0


async def test_more_rows_than_the_bound_are_written_as_the_list() -> None:
    """"Under `ColumnarV2`, OME writes the list instead ... when the InferenceReplica has more rows than
    `maxDecodedInstances`." """
    world = World(status_encoding="Rows")
    await world.serving(replicas=3)
    _switch(world, status_encoding="ColumnarV2", max_decoded_instances=2)
    await world.reconcile()
    stored = (world.replica() or {})["status"]
    assert len(stored["instanceStatuses"]) == 3 and "instanceStatusColumns" not in stored
    assert [e for e in world.recorder.events if e[1] == "InstanceStatusConverted"] == []


async def test_columnar_status_above_the_bound_is_not_decoded() -> None:
    """"OME stops managing an InferenceReplica whose stored status it can't decode, and records a Warning
    event ... `per-Instance status cannot be decoded (<reason>)` - `cardinality_limit`: the object is stored as
    ColumnarV2 with more rows than `maxDecodedInstances`, or the block sets no bound." """
    world = World(status_encoding="Rows")
    await world.serving(replicas=3)
    stored = (world.replica() or {})
    rows = stored["status"].pop("instanceStatuses")
    stored["status"].update(instanceStatusEncoding="ColumnarV2", instanceStatusColumns=columnar.encode(rows))
    world.api.put(INFERENCE_REPLICAS, stored)
    before = _sample("ome_omenative_ir_status_codec_errors_total", {"reason": "cardinality_limit"})
    for bound in (2, None):
        _switch(world, status_encoding="ColumnarV2", max_decoded_instances=bound)
        world.api.writes.clear()
        world.recorder.events.clear()
        await world.reconcile()
        assert world.api.writes == []
        assert world.recorder.events == [
            ("Warning", "InstanceStatusDecodeFailed",
             "InferenceReplica ns/chat-engine per-Instance status cannot be decoded (cardinality_limit)")]
    assert _sample("ome_omenative_ir_status_codec_errors_total", {"reason": "cardinality_limit"}) == before + 2


async def test_a_status_write_rejected_as_too_large_is_a_status_size_exceeded_warning() -> None:
    """"When the API server rejects an InferenceReplica's status write as too large, OME records a
    `StatusSizeExceeded` Warning event ... `status write of <n> bytes (DenseV1)`"; writes_total `rejected`."""
    world = World(status_encoding="Rows")
    await world.serving(replicas=2)

    async def refuse(*_: Any, **__: Any) -> None:
        raise errors.ApiError(413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728")

    world.client.update_status = refuse  # type: ignore[assignment]
    rejected = _sample("ome_omenative_ir_status_writes_total", {"encoding": "dense_v1", "result": "rejected"})
    replica = world.replica() or {}
    try:
        await world.reconciler._status.write(replica, {**replica["status"], "observedGeneration": 99},  # noqa: SLF001
                                             world.recorder)  # type: ignore[arg-type]
    except errors.ApiError:
        pass
    [(kind, reason, message)] = [e for e in world.recorder.events if e[1] == "StatusSizeExceeded"]
    assert kind == "Warning" and "status write of " in message and " bytes (DenseV1)" in message
    assert _sample("ome_omenative_ir_status_writes_total",
                   {"encoding": "dense_v1", "result": "rejected"}) == rejected + 1


def test_instance_rows_respect_the_bound() -> None:
    rows = [{"index": i, "incarnation": 1, "phase": "Ready"} for i in range(4)]
    assert "instanceStatuses" in status.instance_rows(rows, True, max_rows=3)
