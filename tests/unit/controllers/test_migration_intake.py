"""Migration intake (ome.controllers.migration): a request under migrationPolicy mode Never is failed as
it is taken (migration-and-transient-scale.md §Migration policy: "OME fails each migration request at
once"), never recorded Accepted for a pass first; an Auto request is recorded Accepted."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from ome.api.resources import INFERENCE_REPLICAS, INFERENCE_SERVICES
from ome.controllers.migration.reconciler import MigrationReconciler, MigrationSettings
from ome.framework.reconcile import Request
from ome.framework.resources import CONFIGMAPS
from ome.omenative import migration_plan as mp
from ome.omenative import status as replica_status
from tests.unit.controllers.inferencereplica.fakes import FakeApi, FakeClient, FakeRecorder
from tests.unit.omenative.test_rollout_plan import ready_row

UUID = "3f9c2a1e-7b4d-4c8e-9a6f-2d1b5e8c4a70"
KEY = f"ome.io/migration-request-v1-{UUID}"
NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
NEVER = "migrations disabled by MigrationPolicy Mode=Never"


def world(mode: str | None) -> tuple[FakeApi, MigrationReconciler, FakeRecorder]:
    api = FakeApi()
    request = {"schemaVersion": "v1", "component": "engine", "instance": 0, "from_node": "gpu-node-1",
               "requested_by": "alice"}
    api.put(INFERENCE_SERVICES, {
        "metadata": {"name": "chat", "namespace": "ns", "annotations": {KEY: json.dumps(request)}},
        "spec": {"engine": {}},
    })
    lifecycle: dict[str, Any] = {"migrationPolicy": {"mode": mode}} if mode else {}
    api.put(INFERENCE_REPLICAS, {
        "metadata": {"name": "chat-engine", "namespace": "ns", "generation": 1},
        "spec": {"component": "engine", "replicas": 1, "lifecycle": lifecycle},
        "status": replica_status.instance_rows([ready_row(0)], False),
    })
    recorder = FakeRecorder()
    reconciler = MigrationReconciler(FakeClient(api), api, MigrationSettings(),  # type: ignore[arg-type]
                                     recorder=recorder, now=lambda: NOW)  # type: ignore[arg-type]
    return api, reconciler, recorder


async def test_mode_never_fails_the_request_at_intake() -> None:
    api, reconciler, recorder = world("Never")
    await reconciler.reconcile(Request("ns", "chat"))
    replica_writes = [w for w in api.writes_of("update_status") if w[1] == "InferenceReplica"]
    assert len(replica_writes) == 1, "one status write, already Failed: never Accepted for a pass"
    record = (api.get(INFERENCE_REPLICAS, "chat-engine") or {})["status"]["migrations"][0]
    assert record["phase"] == "Failed" and record["message"] == NEVER
    assert record["startedAt"] == record["completedAt"] == record["deadline"] == "2026-12-03T12:00:00Z"
    assert recorder.events == [
        ("Warning", "MigrationRequestRejected", f"OMENative migration uuid={UUID} rejected: {NEVER}")
    ]
    assert KEY not in ((api.get(INFERENCE_SERVICES, "chat") or {})["metadata"].get("annotations") or {})
    ledger = next(iter(((api.of(CONFIGMAPS) or [{}])[0].get("data") or {}).values()))
    assert '"Failed"' in ledger and NEVER in ledger and "alice" in ledger
    # Nothing left to do: the next pass writes nothing.
    writes = len(api.writes)
    await reconciler.reconcile(Request("ns", "chat"))
    assert len(api.writes) == writes


async def test_mode_auto_records_the_request_accepted() -> None:
    api, reconciler, recorder = world(None)
    await reconciler.reconcile(Request("ns", "chat"))
    record = (api.get(INFERENCE_REPLICAS, "chat-engine") or {})["status"]["migrations"][0]
    assert record["phase"] == "Accepted"
    assert not [e for e in recorder.events if e[1] == "MigrationRequestRejected"]


def test_intake_is_born_failed_only_under_never() -> None:
    record, events = mp.intake(UUID, 0, "gpu-node-1", (), "", NOW, 1800.0, "Never")
    assert record["phase"] == "Failed" and record["succeeded"] is False and len(events) == 1
    record, events = mp.intake(UUID, 0, "gpu-node-1", (), "", NOW, 1800.0, "Surge")
    assert record == mp.accepted_record(UUID, 0, "gpu-node-1", (), "", NOW, 1800.0) and events == []
    assert mp.mode_of({}) == "Auto" and mp.mode_of({"migrationPolicy": {"mode": "Never"}}) == "Never"
