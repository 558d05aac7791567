"""Migration request annotations, the audit ConfigMap's entries and the lifecycle.audit caps."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ome.config.inferenceservice_config import LifecycleConfig
from ome.omenative import migration_audit as audit
from ome.omenative import migration_request as mr

UUID = "3f9c2a1e-7b4d-4c8e-9a6f-2d1b5e8c4a70"
KEY = mr.PREFIX + UUID


def body(**over: Any) -> str:
    value: dict[str, Any] = {"schemaVersion": "v1", "component": "engine", "instance": 0,
                             "from_node": "gpu-node-a", "hint_target_nodes": ["gpu-node-b"],
                             "reason": "drain gpu-node-a for maintenance", "requested_at": "2026-09-28T08:00:00Z",
                             "requested_by": "kubectl-ome"}
    value.update(over)
    return json.dumps({k: v for k, v in value.items() if v is not None})


def test_the_documented_example_parses() -> None:
    request = mr.parse(KEY, body())
    assert request == mr.MigrationRequest(UUID, "engine", 0, "gpu-node-a", ("gpu-node-b",),
                                          "drain gpu-node-a for maintenance", "2026-09-28T08:00:00Z",
                                          "kubectl-ome")


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (mr.PREFIX + "nope", body(), "the key must end in a lowercase UUID"),
        (KEY, "{", "value is not valid JSON"),
        (KEY, "[1]", "value must be a JSON object"),
        (KEY, body(schemaVersion="v2"), "schemaVersion must be 'v1', got 'v2'"),
        (KEY, body(component="worker"), "component must be one of engine, decoder, router"),
        (KEY, body(instance=-1), "instance must be a non-negative integer"),
        (KEY, body(instance=True), "instance must be a non-negative integer"),
        (KEY, body(from_node=None), "from_node is required"),
        (KEY, body(from_node="Bad_Node"), "is not a valid node name"),
        (KEY, body(hint_target_nodes=[f"n{i}" for i in range(9)]), "at most 8 nodes"),
        (KEY, body(hint_target_nodes=["gpu-node-a"]), "must not name from_node"),
        (KEY, body(extra=1), "unknown field(s) extra"),
        (KEY, body(reason="x" * 1025), "reason must be text of at most 1024 characters"),
    ],
)
def test_malformed_requests_say_what_is_wrong(key: str, value: str, message: str) -> None:
    with pytest.raises(mr.RequestError) as err:
        mr.parse(key, value)
    assert str(err.value).startswith("migration request") and message in str(err.value)
    # the controller's rejection event quotes the part after `migration request <uuid>: `
    assert str(err.value).endswith(": " + err.value.detail) and message in err.value.detail
    assert err.value.schema == (message.startswith("schemaVersion"))


def isvc(annotations: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "chat", "annotations": annotations}, "spec": {"engine": {}}}


def test_admission_checks_new_requests_and_the_component() -> None:
    assert mr.admission_error(isvc({KEY: body()})) is None
    assert mr.admission_error(isvc({KEY: body(component="decoder")})) == (
        f"migration request {UUID}: the InferenceService has no decoder component"
    )
    bad = isvc({KEY: body(schemaVersion="v0")})
    assert (mr.admission_error(bad) or "").startswith("migration request")
    # an unchanged request already admitted is not checked again (the controller reports it)
    assert mr.admission_error(bad, bad) is None


def record(uuid: str, phase: str = "Completed") -> dict[str, Any]:
    return {"requestUUID": uuid, "sourceInstance": 0, "surgeInstance": 2, "phase": phase,
            "startedAt": "2026-09-28T10:12:04Z", "allocatedAt": "2026-09-28T10:12:05Z",
            "completedAt": "2026-09-28T10:31:00Z", "message": "migrated to instance=2", "fromNode": "a"}


def test_audit_entry_is_replaced_by_its_outcome_and_bounded_to_200() -> None:
    started = audit.started_entry("engine", record(UUID, "Accepted"), "kubectl-ome")
    entries = audit.merge([], [started])
    assert entries[0]["phase"] == "Started" and entries[0]["requestedBy"] == "kubectl-ome"
    entries = audit.merge(entries, [audit.finished_entry("engine", record(UUID))])
    assert len(entries) == 1 and entries[0]["phase"] == "Completed" and entries[0]["message"] == "migrated"
    assert entries[0]["requestedBy"] == "kubectl-ome" and entries[0]["replacementInstance"] == 2
    many = [audit.finished_entry("engine", record(f"u-{i}")) for i in range(250)]
    kept = audit.merge(entries, many)
    assert len(kept) == 200 and kept[0]["requestUUID"] == "u-50" and kept[-1]["requestUUID"] == "u-249"
    data = audit.configmap_data(kept)
    assert audit.entries_of({"data": data}) == kept
    assert audit.configmap_name("qwen3-0-6b") == "qwen3-0-6b-ome-migration-audit"


def test_history_entry_and_its_bound() -> None:
    entry = audit.history_entry("engine", record(UUID), "kubectl-ome")
    assert entry == {"id": UUID, "component": "engine", "instance": 0, "mode": "Surge", "phase": "Completed",
                     "requestedAt": "2026-09-28T10:12:04Z", "startedAt": "2026-09-28T10:12:05Z",
                     "completedAt": "2026-09-28T10:31:00Z", "replacementInstance": 2,
                     "requestedBy": "kubectl-ome", "outcomeReason": "migrated to instance=2"}
    history = audit.merge_history([{**entry, "phase": "Accepted"}], [entry])
    assert history == [entry]
    assert len(audit.merge_history([], [{**entry, "id": str(i)} for i in range(300)])) == 200


@pytest.mark.parametrize(
    ("block", "caps"),
    [
        ({"maxInFlightMigrations": 3, "maxMigrationsPerWindow": 10, "window": "1h"}, (10, 3600.0, 3)),
        ({"maxInFlightMigrations": 3, "maxMigrationsPerWindow": 10}, None),
        ({"maxInFlightMigrations": 0, "maxMigrationsPerWindow": 10, "window": "1h"}, None),
        ({"maxInFlightMigrations": 3, "maxMigrationsPerWindow": 10, "window": "soon"}, None),
        (None, None),
    ],
)
def test_lifecycle_audit_caps_need_all_three_above_zero(block: Any, caps: Any) -> None:
    raw = {"instanceReadyTimeout": "30m"} | ({"audit": block} if block is not None else {})
    assert LifecycleConfig.model_validate(raw).migration_caps() == caps


@pytest.mark.parametrize(("configured", "expected"), [(False, "True"), (True, "False")])
def test_policy_unconfigured_condition_follows_the_config_for_a_waiting_record(configured: bool,
                                                                                expected: str) -> None:
    from datetime import UTC, datetime

    from ome.omenative import revisions, status
    from tests.unit.omenative.builders import replica

    rep = replica()
    rep["status"] = {"migrations": [{"requestUUID": UUID, "phase": "Accepted", "sourceInstance": 0}]}
    data = revisions.from_spec(rep["spec"])
    assert data is not None
    out = status.compute(status.Inputs(replica=rep, rows=[], pods=[], revisions={"abc": data}, desired=1,
                                       update_revision="chat-engine-abc", now=datetime(2026, 1, 1, tzinfo=UTC),
                                       migration_audit_configured=configured))
    cond = next(c for c in out["conditions"] if c["type"] == "MigrationPolicyUnconfigured")
    assert cond["status"] == expected
    assert out["migrations"] == rep["status"]["migrations"]  # carried by the replica controller's write
