from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ome.omenative import instances, revisions
from ome.omenative.pods_view import PodView
from tests.unit.omenative.builders import pod, replica

NOW = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)


def ctx(desired: int, workers: int = 0, **kw: object) -> instances.Context:
    data = revisions.from_spec(replica(workers=workers)["spec"])
    assert data is not None
    params = dict(
        base="chat",
        component="engine",
        desired=desired,
        update_revision="chat-engine-abc",
        update_hash="abc",
        revisions={"abc": data},
        now=NOW,
        ready_timeout=1800.0,
        drain_timeout=600.0,
    )
    params.update(kw)
    return instances.Context(**params)  # type: ignore[arg-type]


def ready_row(index: int, incarnation: int = 1) -> dict:
    return {
        "index": index,
        "incarnation": incarnation,
        "phase": "Ready",
        "runningRevision": "chat-engine-abc",
        "targetRevision": "chat-engine-abc",
        "readySince": "2026-01-01T00:01:00Z",
    }


def gang(index: int, incarnation: int = 1, **kw: object) -> list[PodView]:
    return [
        pod(f"chat-engine-{index}-leader-0", index=index, runner="leader", incarnation=incarnation, **kw),
        pod(f"chat-engine-{index}-worker-0", index=index, runner="worker", incarnation=incarnation, **kw),
    ]


def test_new_instances_take_lowest_free_indices_at_incarnation_one() -> None:
    plan = instances.plan(ctx(2), [], [])
    assert [(c.index, c.incarnation, sorted(c.names)) for c in plan.creates] == [
        (0, 1, ["chat-engine-0-default-0"]),
        (1, 1, ["chat-engine-1-default-0"]),
    ]
    assert [r["phase"] for r in plan.rows] == ["Creating", "Creating"]
    assert plan.rows[0]["operation"]["deadline"] == "2026-01-01T00:40:00Z"


def test_gates_open_only_when_every_pod_of_the_gang_is_ready() -> None:
    row = {**ready_row(0), "phase": "Creating"}
    half = [
        gang(0, gate=None, ready=False)[0],
        pod(
            "chat-engine-0-worker-0", index=0, runner="worker", containers_ready=False, gate=None, ready=False
        ),
    ]
    assert instances.plan(ctx(1, workers=1), [row], half).open_gates == []
    both = gang(0, gate=None, ready=False)
    assert sorted(instances.plan(ctx(1, workers=1), [row], both).open_gates) == [
        "chat-engine-0-leader-0",
        "chat-engine-0-worker-0",
    ]


def test_creating_instance_becomes_ready_once_every_pod_serves() -> None:
    row = {**ready_row(0), "phase": "Creating", "operation": {"type": "Create"}}
    plan = instances.plan(ctx(1, workers=1), [row], gang(0))
    assert plan.rows[0]["phase"] == "Ready" and "operation" not in plan.rows[0]


def test_min_ready_seconds_delays_ready_and_schedules_a_wakeup() -> None:
    row = {**ready_row(0), "phase": "Creating"}
    plan = instances.plan(
        ctx(1, min_ready_seconds=60),
        [row],
        [pod("chat-engine-0-default-0", ready_since="2026-01-01T00:09:30Z")],
    )
    assert plan.rows[0]["phase"] == "Creating" and plan.wake_after == 30


def test_lost_worker_restarts_the_whole_instance_at_next_incarnation() -> None:
    pods = gang(0)[:1]
    plan = instances.plan(ctx(1, workers=1), [ready_row(0)], pods)
    row = plan.rows[0]
    assert (row["phase"], row["incarnation"], row["operation"]["type"]) == ("Restarting", 2, "Restart")
    assert row["lastFailure"]["podName"] == "chat-engine-0-worker-0"
    assert plan.close_gates == ["chat-engine-0-leader-0"] and plan.deletes == [] and plan.creates == []
    assert plan.events[0][1] == "RestartTriggered" and "(incarnation=2)" in plan.events[0][2]


def test_restart_deletes_drained_old_pods_then_creates_new_ones() -> None:
    row = {**ready_row(0, incarnation=2), "phase": "Restarting"}
    drained = [pod("chat-engine-0-leader-0", index=0, runner="leader", gate="False", ready=False)]
    assert instances.plan(ctx(1, workers=1), [row], drained).deletes == ["chat-engine-0-leader-0"]
    plan = instances.plan(ctx(1, workers=1), [row], [])
    assert [(c.incarnation, len(c.names)) for c in plan.creates] == [(2, 2)]


def test_single_pod_instance_leaves_restarts_to_the_kubelet_and_replaces_a_lost_pod() -> None:
    plan = instances.plan(ctx(1), [ready_row(0)], [pod("chat-engine-0-default-0", phase="Failed")])
    assert plan.rows[0]["phase"] == "Ready" and plan.deletes == ["chat-engine-0-default-0"]


def test_scale_down_removes_highest_indices_after_draining() -> None:
    pods = [pod(f"chat-engine-{i}-default-0", index=i) for i in range(3)]
    plan = instances.plan(ctx(1), [ready_row(i) for i in range(3)], pods)
    assert [(r["index"], r["phase"]) for r in plan.rows] == [(0, "Ready"), (1, "Deleting"), (2, "Deleting")]
    assert sorted(plan.close_gates) == ["chat-engine-1-default-0", "chat-engine-2-default-0"]
    assert plan.deletes == []


def test_deleting_instance_goes_with_its_last_pod() -> None:
    row = {**ready_row(1), "phase": "Deleting"}
    drained = pod("chat-engine-1-default-0", index=1, gate="False", ready=False)
    assert instances.plan(ctx(0), [row], [drained]).deletes == ["chat-engine-1-default-0"]
    plan = instances.plan(ctx(0), [row], [])
    assert plan.rows == [] and plan.removed == [1]


def test_scale_down_keeps_ready_instances_before_others() -> None:
    rows = [{**ready_row(0), "phase": "Creating"}, ready_row(1)]
    keep, drop = instances.choose(1, {0: rows[0], 1: rows[1]}, {})
    assert (keep, drop) == ({1}, {0})


def test_instance_past_its_deadline_fails() -> None:
    row = {
        **ready_row(0),
        "phase": "Creating",
        "operation": {"type": "Create", "deadline": "2026-01-01T00:05:00Z"},
    }
    plan = instances.plan(
        ctx(1), [row], [pod("chat-engine-0-default-0", containers_ready=False, gate=None, ready=False)]
    )
    assert plan.rows[0]["phase"] == "Failed" and plan.events[0][1] == "InstanceFailed"


def test_settled_replica_plans_no_writes() -> None:
    plan = instances.plan(ctx(2, workers=1), [ready_row(0), ready_row(1)], gang(0) + gang(1))
    assert (plan.creates, plan.deletes, plan.open_gates, plan.close_gates) == ([], [], [], [])


def failed_row(**operation: object) -> dict:
    op = {"id": "0-1-create", "type": "Create", "step": "CreatePods", "deadline": "2026-01-01T00:09:00Z"}
    return {
        **ready_row(0),
        "phase": "Failed",
        "operation": {**op, **operation},
        "lastFailure": {
            "podName": "chat-engine-0-default-0",
            "reason": "ContainersNotReady",
            "time": "2026-01-01T00:09:30Z",
        },
    }


def unready(name: str = "chat-engine-0-default-0") -> PodView:
    return pod(name, containers_ready=False, gate=None, ready=False)


def test_missed_deadline_records_what_the_pod_lacks() -> None:
    row = {
        **ready_row(0),
        "phase": "Creating",
        "operation": {"type": "Create", "deadline": "2026-01-01T00:05:00Z"},
    }
    plan = instances.plan(ctx(1), [row], [unready()])
    failure = plan.rows[0]["lastFailure"]
    assert (failure["podName"], failure["reason"], failure["time"]) == (
        "chat-engine-0-default-0",
        "ContainersNotReady",
        "2026-01-01T00:10:00Z",
    )
    gated = pod("chat-engine-0-default-0", gate="False", ready=False)
    assert (
        instances.plan(ctx(1), [row], [gated]).rows[0]["lastFailure"]["reason"] == "ReadinessGateNotSatisfied"
    )
    assert instances.plan(ctx(1), [row], []).rows[0]["lastFailure"]["reason"] == "DeadlineExceeded"


def test_failed_create_waits_out_its_backoff() -> None:
    plan = instances.plan(ctx(1), [failed_row()], [unready()])  # failed 30s ago; first retry after 60s
    assert plan.rows[0]["phase"] == "Failed" and plan.deletes == [] and plan.wake_after == 30


def test_failed_create_retries_with_fresh_pods_at_the_same_incarnation() -> None:
    later = ctx(1, now=NOW + timedelta(seconds=31))
    assert instances.plan(later, [failed_row()], [unready()]).deletes == ["chat-engine-0-default-0"]
    plan = instances.plan(later, [failed_row()], [])
    row = plan.rows[0]
    assert (row["phase"], row["incarnation"], row["operation"]["retryCount"]) == ("Creating", 1, 1)
    assert row["operation"]["id"] == "0-1-create-1" and row["operation"]["deadline"] == "2026-01-01T00:40:31Z"
    assert [(c.incarnation, sorted(c.names)) for c in plan.creates] == [(1, ["chat-engine-0-default-0"])]


def test_each_retry_backs_off_longer() -> None:
    row = failed_row(retryCount=2)  # third attempt failed: 60s x 2^2 = 4m
    assert instances.plan(ctx(1, now=NOW + timedelta(minutes=3)), [row], [unready()]).deletes == []
    assert instances.plan(ctx(1, now=NOW + timedelta(minutes=4)), [row], [unready()]).deletes != []


def test_a_failed_rebuild_or_a_whole_serving_instance_is_not_retried() -> None:
    later = ctx(1, now=NOW + timedelta(hours=1))
    assert instances.plan(later, [failed_row(reason="Rebuild")], [unready()]).deletes == []
    plan = instances.plan(later, [failed_row()], [pod("chat-engine-0-default-0")])
    assert plan.deletes == [] and plan.rows[0]["phase"] == "Ready"


def test_rebuild_of_a_pending_instance_is_marked() -> None:
    row = {**ready_row(0), "phase": "Pending"}
    assert instances.plan(ctx(1), [row], []).rows[0]["operation"]["reason"] == "Rebuild"
