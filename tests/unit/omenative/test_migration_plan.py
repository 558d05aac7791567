"""Surge migration state machine (ome.omenative.migration_plan): phases, caps, windows, messages."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

from ome.omenative import instances
from ome.omenative import migration_plan as mp
from ome.omenative.pods_view import format_time
from ome.omenative.rollout_pods import RolloutPod
from tests.unit.omenative.test_rollout_plan import H_OLD, NOW, OLD, R_OLD, pod, ready_row

UUID = "3f9c2a1e-7b4d-4c8e-9a6f-2d1b5e8c4a70"
CAPS = mp.Caps(max_per_window=10, window=3600.0, max_in_flight=3)
Row = dict[str, Any]


def record(uuid: str = UUID, instance: int = 0, from_node: str = "gpu-node-1", **extra: Any) -> Row:
    rec = mp.accepted_record(uuid, instance, from_node, ("gpu-node-2",), "maintenance", NOW, 1800.0)
    return {**rec, **extra}


def nodes(pods: list[RolloutPod], where: dict[int, str] | None = None) -> dict[str, str]:
    where = where or {}
    return {p.name: where.get(p.index, f"gpu-node-{p.index + 1}") for p in pods}


def inputs(records: list[Row], rows: list[Row], pods: list[RolloutPod], **kw: Any) -> mp.Inputs:
    base: dict[str, Any] = dict(
        namespace="ns", replica="chat-engine", base="chat", component="engine", records=records, rows=rows,
        pods=pods, nodes=nodes(pods), revisions={H_OLD: OLD}, now=NOW, caps=CAPS,
    )
    base.update(kw)
    return mp.Inputs(**base)


def two() -> tuple[list[Row], list[RolloutPod]]:
    return [ready_row(0), ready_row(1)], [pod(0), pod(1)]


def test_accepted_request_starts_a_surge_at_the_lowest_unused_index() -> None:
    rows, pods = two()
    out = mp.plan(inputs([record()], rows, pods))
    rec = out.records[0]
    assert rec["phase"] == "SurgePending" and rec["surgeInstance"] == 2
    assert rec["message"] == "surge allocated; waiting for surge pods"
    assert out.rows[0]["phase"] == "Migrating" and out.rows[0]["operation"]["type"] == "Migrate"
    assert out.rows[2]["phase"] == "Creating" and out.rows[2]["runningRevision"] == R_OLD
    assert [(c.index, c.runner, c.ordinal) for c in out.creates] == [(2, "default", 0)]
    assert out.avoid[2] == ("gpu-node-1", ("gpu-node-2",))
    assert out.events == [("Normal", "MigrationRequestAccepted",
                           f"OMENative component=engine instance=0 migration accepted (uuid={UUID}, "
                           "source-node=gpu-node-1, surge-index=2)")]
    # the replica planner neither counts nor touches the surge, and keeps the Migrating source
    assert instances.replacement(out.rows[2]) and not instances.replacement(out.rows[0])
    keep, drop = instances.choose(2, {0: out.rows[0], 1: rows[1], 2: out.rows[2]}, {})
    assert keep == {0, 1} and not drop


def surging(**rec: Any) -> tuple[Row, list[Row]]:
    rows, _ = two()
    out = mp.plan(inputs([record()], rows, [pod(0), pod(1)]))
    merged = {i: r for i, r in enumerate(rows)} | out.rows
    return {**out.records[0], **rec}, [merged[i] for i in sorted(merged)]


def test_the_source_drains_only_after_the_surge_serves_for_min_ready_seconds() -> None:
    rec, rows = surging()
    # surge pod up, containers ready, gate not yet set: the gate opens, nothing drains
    fresh = pod(2, gate=None, ready=False, ready_since=NOW)
    out = mp.plan(inputs([rec], rows, [pod(0), pod(1), fresh], min_ready_seconds=30))
    assert out.open_gates == ["chat-engine-2-default-0"] and out.records[0]["phase"] == "SurgePending"
    assert not out.close_gates and not out.deletes
    # serving but not for minReadySeconds yet: still SurgePending, wakes when the window ends
    serving = pod(2, ready_since=NOW - timedelta(seconds=10))
    out = mp.plan(inputs([rec], rows, [pod(0), pod(1), serving], min_ready_seconds=30))
    assert out.records[0]["phase"] == "SurgePending" and not out.close_gates
    assert out.wake_after is not None and out.wake_after <= 20
    # past the window: Draining, the source leaves rotation
    later = dataclasses.replace(inputs([rec], rows, [pod(0), pod(1), serving], min_ready_seconds=30),
                                now=NOW + timedelta(seconds=25))
    out = mp.plan(later)
    assert out.records[0]["phase"] == "Draining"
    assert out.records[0]["message"] == "draining source instance=0"
    assert out.close_gates == ["chat-engine-0-default-0"] and not out.deletes


def test_a_drained_source_is_deleted_and_the_move_completes_with_the_documented_texts() -> None:
    rec, rows = surging(phase="Draining")
    drained = pod(0, gate="False", ready=False)
    out = mp.plan(inputs([rec], rows, [drained, pod(1), pod(2)]))
    assert out.deletes == ["chat-engine-0-default-0"] and out.records[0]["phase"] == "Draining"
    out = mp.plan(inputs([rec], rows, [pod(1), pod(2)]))
    done = out.records[0]
    assert done["phase"] == "Completed" and done["message"] == "migrated to instance=2"
    assert done["succeeded"] is True and out.finished == [done]
    assert out.removed == [0] and out.rows[2]["phase"] == "Ready" and "operation" not in out.rows[2]
    assert out.events == [(
        "Normal", "MigrationCompleted",
        f"OMENative migration uuid={UUID} complete: component=engine instance=0 -> instance=2 "
        f"(revision={R_OLD})",
    )]


def test_mode_never_fails_the_request_at_once() -> None:
    rows, pods = two()
    out = mp.plan(inputs([record()], rows, pods, mode="Never"))
    assert out.records[0]["phase"] == "Failed"
    assert out.records[0]["message"] == "migrations disabled by MigrationPolicy Mode=Never"
    assert out.events == [("Warning", "MigrationRequestRejected",
                           f"OMENative migration uuid={UUID} rejected: migrations disabled by MigrationPolicy Mode=Never")]
    assert not out.creates and not out.rows


def test_no_audit_caps_holds_the_request_with_one_event() -> None:
    rows, pods = two()
    out = mp.plan(inputs([record()], rows, pods, caps=None))
    rec = out.records[0]
    assert rec["phase"] == "Accepted"
    assert rec["message"] == "waiting for migration capacity policy (no lifecycle.audit configured)"
    assert out.events == [("Warning", "MigrationPolicyUnconfigured",
                           f"OMENative migration uuid={UUID} held: waiting for migration capacity policy "
                           "(no lifecycle.audit configured)")]
    again = mp.plan(inputs([rec], rows, pods, caps=None))
    assert again.records == [rec] and not again.events
    # caps added: the move starts
    started = mp.plan(inputs([rec], rows, pods))
    assert started.records[0]["phase"] == "SurgePending"


def test_deadline_in_accepted_is_the_documented_bug_text() -> None:
    rows, pods = two()
    rec = mp.accepted_record(UUID, 0, "gpu-node-1", (), "", NOW, None)  # no timeout: deadline = now
    out = mp.plan(inputs([rec], rows, pods, caps=None))
    assert out.records[0]["message"] == "deadline exceeded in phase Accepted: surge never allocated"
    assert out.events == [("Warning", "MigrationExpired", f"OMENative migration uuid={UUID} expired: deadline "
                                                          "exceeded in phase Accepted: surge never allocated")]


def allocated(uuid: str, minutes_ago: int) -> Row:
    at = format_time(NOW - timedelta(minutes=minutes_ago))
    return {**record(uuid), "phase": "Completed", "allocatedAt": at, "completedAt": at, "surgeInstance": 9}


def test_rate_cap_rejects_the_eleventh_start_in_the_window() -> None:
    rows, pods = two()
    done = [allocated(f"00000000-0000-4000-8000-{i:012d}", 5 + i) for i in range(10)]
    out = mp.plan(inputs([*done, record()], rows, pods))
    failed = out.records[-1]
    assert failed["phase"] == "Failed"
    assert failed["message"] == "migration rate cap reached (10/10 in the last 1h0m0s)"
    text = f"OMENative migration uuid={UUID} rejected: migration rate cap reached (10/10 in the last 1h0m0s)"
    assert out.events == [("Warning", "RateLimited", text), ("Warning", "MigrationRequestRejected", text)]
    # one start ages out of the window: the request starts
    aged = [*done[:9], allocated("00000000-0000-4000-8000-999999999999", 61)]
    out = mp.plan(inputs([*aged, record()], rows, pods))
    assert out.records[-1]["phase"] == "SurgePending"


def test_from_node_that_does_not_host_the_source_fails_with_the_mismatch_text() -> None:
    rows, pods = two()
    out = mp.plan(inputs([record(from_node="node-a")], rows, pods))
    assert out.records[0]["message"] == "request.FromNode=node-a does not match observed source node=gpu-node-1"
    text = (f"OMENative migration uuid={UUID} rejected: request.FromNode=node-a does not match observed source "
            "node=gpu-node-1")
    assert out.events == [("Warning", "MigrationFromNodeMismatch", text), ("Warning", "MigrationRequestRejected", text)]


def test_one_move_per_component_oldest_first_and_busy_sources_wait() -> None:
    rows, pods = two()
    second = record("11111111-2222-4333-8444-555555555555", instance=1, from_node="gpu-node-2")
    second["startedAt"] = format_time(NOW + timedelta(seconds=1))
    out = mp.plan(inputs([second, record()], rows, pods))
    assert out.records[1]["phase"] == "SurgePending" and out.records[0]["phase"] == "Accepted"
    # a source that is not Ready waits; so does everything during a pause or an update
    not_ready = [ready_row(0, phase="Creating"), ready_row(1)]
    assert mp.plan(inputs([record()], not_ready, pods)).records[0]["phase"] == "Accepted"
    assert mp.plan(inputs([record()], rows, pods, paused=True)).records[0]["phase"] == "Accepted"
    updating = [ready_row(0), ready_row(1, phase="Updating")]
    assert mp.plan(inputs([record()], updating, pods)).records[0]["phase"] == "Accepted"


def test_missing_source_is_rejected() -> None:
    rows, pods = two()
    out = mp.plan(inputs([record(instance=7)], rows, pods))
    assert out.records[0]["phase"] == "Failed" and out.records[0]["message"] == "source InstanceStatus missing"
    assert out.events == [("Warning", "MigrationRequestRejected",
                           f"OMENative migration uuid={UUID} rejected: source InstanceStatus missing")]


def test_surge_deadline_fails_removes_the_surge_and_the_source_serves_on() -> None:
    rec, rows = surging()
    late = inputs([rec], rows, [pod(0), pod(1), pod(2, containers_ready=False, gate=None)])
    out = mp.plan(dataclasses.replace(late, now=NOW + timedelta(minutes=31)))
    assert out.records[0]["message"] == "deadline exceeded in phase SurgePending: surge pods never became ready"
    assert out.events == [("Warning", "MigrationExpired", f"OMENative migration uuid={UUID} expired: deadline "
                           "exceeded in phase SurgePending: surge pods never became ready; tearing down surge "
                           "instance=2")]
    assert out.rows[0]["phase"] == "Ready" and "operation" not in out.rows[0]
    assert out.rows[2]["operation"]["step"] == "MigrationSurgeCleanup"
    cleanup_rows = [out.rows[0], rows[1], out.rows[2]]
    out = mp.plan(inputs(out.records, cleanup_rows, [pod(0), pod(1), pod(2)]))
    assert out.deletes == ["chat-engine-2-default-0"] and 2 not in out.removed
    out = mp.plan(inputs(out.records, cleanup_rows, [pod(0), pod(1)]))
    assert out.removed == [2]


def test_a_wedged_surge_pod_fails_the_request_past_the_stuck_grace() -> None:
    rec, rows = surging()
    stuck = pod(2, waiting="ImagePullBackOff", created=NOW - timedelta(seconds=90))
    out = mp.plan(inputs([rec], rows, [pod(0), pod(1), stuck], stuck_grace=60.0))
    assert out.records[0]["message"] == (
        "surge pod chat-engine-2-default-0 wedged in ImagePullBackOff past the stuck-pod grace"
    )
    assert out.events == [("Warning", "MigrationSurgeWedged", f"OMENative migration uuid={UUID} failed: surge pod "
                           "chat-engine-2-default-0 wedged in ImagePullBackOff past the stuck-pod grace; tearing "
                           "down surge instance=2")]
    # without a grace the deadline decides
    assert mp.plan(inputs([rec], rows, [pod(0), pod(1), stuck])).records[0]["phase"] == "SurgePending"


def test_a_refused_surge_create_is_reported_and_retried_until_the_deadline() -> None:
    rec, rows = surging()
    out = mp.plan(inputs([rec], rows, [pod(0), pod(1)], blocked={2: "chat-engine-2-default-0"}))
    assert out.events == [("Warning", "MigrationSurgeCreateBlocked", f"OMENative migration uuid={UUID} waiting "
                           "to create surge pod chat-engine-2-default-0 before its deadline")]
    assert out.records[0]["phase"] == "SurgePending" and [c.index for c in out.creates] == [2]
    again = mp.plan(inputs(out.records, rows, [pod(0), pod(1)]))
    assert not again.events and [c.index for c in again.creates] == [2]


def test_finished_records_leave_status_after_the_window() -> None:
    rows, pods = two()
    old = allocated("00000000-0000-4000-8000-000000000001", 61)
    fresh = allocated("00000000-0000-4000-8000-000000000002", 5)
    out = mp.plan(inputs([old, fresh], rows, pods))
    assert [r["requestUUID"] for r in out.records] == [fresh["requestUUID"]]


def test_a_settled_pass_changes_nothing() -> None:
    rows, pods = two()
    done = allocated("00000000-0000-4000-8000-000000000002", 5)
    out = mp.plan(inputs([done], rows, pods))
    assert out.records == [done] and not out.rows and not out.events and not out.creates


def test_a_source_pinned_to_from_node_fails_with_the_affinity_conflict() -> None:
    from ome.omenative.revisions import from_spec, revision_hash
    from tests.unit.omenative import builders

    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["gpu-node-1"]}]}]}}}
    pinned = from_spec({"runners": [{**builders.runners()[0], "template": builders.template("img:1",
                                                                                          affinity=affinity)}]})
    assert pinned is not None
    digest = revision_hash(pinned)
    rows = [{**ready_row(0), "runningRevision": f"chat-engine-{digest}"}, ready_row(1)]
    out = mp.plan(inputs([record()], rows, [pod(0, digest=digest), pod(1)], revisions={H_OLD: OLD, digest: pinned}))
    why = ("source PodSpec NodeAffinity requires kubernetes.io/hostname=gpu-node-1; overlay's NotIn[gpu-node-1] "
           "would make scheduling impossible")
    assert out.records[0]["message"] == why
    text = f"OMENative migration uuid={UUID} rejected: {why}"
    assert out.events == [("Warning", "MigrationNodeAffinityConflict", text),
                          ("Warning", "MigrationRequestRejected", text)]
    assert OLD is not None and mp.pinned(pinned, "gpu-node-1") and not mp.pinned(OLD, "gpu-node-1")


def test_a_drain_past_the_deadline_expires_and_the_source_serves_again() -> None:
    rec, rows = surging(phase="Draining")
    closing = pod(0, gate="False", ready=True)  # gate closed, Ready not yet followed: not drained
    late = dataclasses.replace(inputs([rec], rows, [closing, pod(1), pod(2)]), now=NOW + timedelta(minutes=31))
    out = mp.plan(late)
    assert out.records[0]["phase"] == "Failed"
    assert out.records[0]["message"] == "deadline exceeded in phase Draining: source drain incomplete"
    assert out.events == [("Warning", "MigrationExpired", f"OMENative migration uuid={UUID} expired: deadline "
                           "exceeded in phase Draining: source drain incomplete; tearing down surge instance=2")]
    assert out.open_gates == ["chat-engine-0-default-0"] and out.rows[0]["phase"] == "Ready"
    assert out.rows[2]["operation"]["step"] == "MigrationSurgeCleanup"
    # a drained source past the deadline finishes the move instead
    drained = pod(0, gate="False", ready=False)
    done = mp.plan(dataclasses.replace(late, pods=[drained, pod(1), pod(2)]))
    assert done.records[0]["phase"] == "Draining" and done.deletes == ["chat-engine-0-default-0"]


def test_a_gang_source_needs_from_node_to_host_one_of_its_pods() -> None:
    from ome.omenative.revisions import from_spec, revision_hash
    from tests.unit.omenative import builders

    gang = from_spec({"runners": builders.runners(workers=1)})
    assert gang is not None and gang.multi_pod
    digest = revision_hash(gang)
    rows = [{**ready_row(0), "runningRevision": f"chat-engine-{digest}"}, ready_row(1)]
    pods = [pod(0, 0, digest=digest), pod(0, 1, digest=digest), pod(1)]
    spans = {pods[0].name: "gpu-node-3", pods[1].name: "gpu-node-1", pods[2].name: "gpu-node-2"}
    known = {H_OLD: OLD, digest: gang}
    ok = mp.plan(inputs([record(from_node="gpu-node-3")], rows, pods, nodes=spans, revisions=known))
    assert ok.records[0]["phase"] == "SurgePending"
    out = mp.plan(inputs([record(from_node="gpu-node-9")], rows, pods, nodes=spans, revisions=known))
    assert out.records[0]["message"] == (
        "request.FromNode=gpu-node-9 hosts no source pod; gang spans nodes gpu-node-1, gpu-node-3"
    )
    # a pod not yet scheduled: the request waits rather than judging from_node
    unscheduled = {k: v for k, v in spans.items() if k != pods[0].name}
    wait = mp.plan(inputs([record(from_node="gpu-node-9")], rows, pods, nodes=unscheduled, revisions=known))
    assert wait.records[0]["phase"] == "Accepted" and not wait.events


def test_a_pause_holds_a_request_past_its_deadline_until_resume() -> None:
    """migration-and-transient-scale.md: "A paused rollout holds every migration until you resume it, and a
    request whose deadline passes during the pause fails when you do." """
    rows, pods = two()
    late = dataclasses.replace(inputs([record()], rows, pods, paused=True), now=NOW + timedelta(minutes=31))
    held = mp.plan(late)
    assert held.records[0]["phase"] == "Accepted" and not held.events and not held.creates
    resumed = mp.plan(dataclasses.replace(late, paused=False))
    assert resumed.records[0]["message"] == "deadline exceeded in phase Accepted: surge never allocated"
    assert [e[1] for e in resumed.events] == ["MigrationExpired"]
    # a surge waiting during the pause is held too, and expires on resume
    rec, surge_rows = surging()
    waiting = inputs([rec], surge_rows, [pod(0), pod(1), pod(2, containers_ready=False, gate=None)], paused=True)
    held = mp.plan(dataclasses.replace(waiting, now=NOW + timedelta(minutes=31)))
    assert held.records[0]["phase"] == "SurgePending" and not held.events
    resumed = mp.plan(dataclasses.replace(waiting, paused=False, now=NOW + timedelta(minutes=31)))
    assert resumed.records[0]["phase"] == "Failed" and [e[1] for e in resumed.events] == ["MigrationExpired"]
