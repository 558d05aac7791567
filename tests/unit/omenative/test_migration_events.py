"""Migration event texts (ome.omenative.migration_events) against the v1.3 docs' examples and wording."""

from __future__ import annotations

from ome.omenative import migration_events as ev

UUID = "3f9c2a1e-7b4d-4c8e-9a6f-2d1b5e8c4a70"


def test_migration_completed_is_the_documented_example() -> None:
    # concepts/omenative/migration-and-transient-scale.md, Watch migrations
    assert ev.completed(UUID, "engine", 0, 2, "qwen3-0-6b-engine-7b4c2e19") == (
        "OMENative migration uuid=3f9c2a1e-7b4d-4c8e-9a6f-2d1b5e8c4a70 complete: component=engine instance=0 "
        "-> instance=2 (revision=qwen3-0-6b-engine-7b4c2e19)"
    )


def test_documented_record_messages() -> None:
    assert ev.rate_cap(10, 10, "1h0m0s") == "migration rate cap reached (10/10 in the last 1h0m0s)"
    assert ev.EXPIRY_BLOCKERS["Accepted"] == "deadline exceeded in phase Accepted: surge never allocated"
    assert ev.EXPIRY_BLOCKERS["SurgePending"] == (
        "deadline exceeded in phase SurgePending: surge pods never became ready")
    assert ev.from_node_mismatch("node-a", ["gpu-node-1"], False) == (
        "request.FromNode=node-a does not match observed source node=gpu-node-1")
    assert ev.NEVER_MESSAGE == "migrations disabled by MigrationPolicy Mode=Never"
    assert ev.UNCONFIGURED_MESSAGE == "waiting for migration capacity policy (no lifecycle.audit configured)"


def test_a_refusal_with_its_own_reason_also_records_migration_request_rejected() -> None:
    # the docs' table: MigrationRequestRejected for any failure but the deadline or a stuck surge pod
    text = f"OMENative migration uuid={UUID} rejected: migration rate cap reached (10/10 in the last 1h0m0s)"
    assert ev.rejection("RateLimited", UUID, ev.rate_cap(10, 10, "1h0m0s")) == [
        ("Warning", "RateLimited", text), ("Warning", "MigrationRequestRejected", text)]
    assert ev.rejection("MigrationRequestRejected", UUID, ev.NEVER_MESSAGE) == [
        ("Warning", "MigrationRequestRejected",
         f"OMENative migration uuid={UUID} rejected: migrations disabled by MigrationPolicy Mode=Never")]


def test_reasons_are_the_documented_ones() -> None:
    assert (ev.ACCEPTED, ev.COMPLETED, ev.REJECTED, ev.FROM_NODE_MISMATCH, ev.AFFINITY_CONFLICT, ev.RATE_LIMITED,
            ev.UNCONFIGURED, ev.CREATE_BLOCKED, ev.WEDGED, ev.EXPIRED, ev.AUTO_TRIGGERED, ev.AUTO_CAP) == (
        "MigrationRequestAccepted", "MigrationCompleted", "MigrationRequestRejected", "MigrationFromNodeMismatch",
        "MigrationNodeAffinityConflict", "RateLimited", "MigrationPolicyUnconfigured",
        "MigrationSurgeCreateBlocked", "MigrationSurgeWedged", "MigrationExpired", "AutoMigrationTriggered",
        "AutoMigrationCapReached")


def test_accepted_and_relocation_texts() -> None:
    assert ev.accepted("engine", 0, UUID, "gpu-node-a", 2) == (
        f"OMENative component=engine instance=0 migration accepted (uuid={UUID}, source-node=gpu-node-a, "
        "surge-index=2)")
    assert ev.auto_triggered("engine", 1, 2, 3, "gpu-node-a", UUID) == (
        "OMENative component=engine instance=1 relocation directive recorded: attempt 2/3, rebuild steered off "
        f"node gpu-node-a (uuid={UUID})")
    assert ev.auto_cap("engine", 1, 3, 3) == (
        "OMENative component=engine instance=1 relocation budget exhausted (3/3 attempts); further expiries "
        "dispose terminal without relocation")
    assert ev.unknown_component("decoder") == 'component "decoder" does not exist on this InferenceService'
