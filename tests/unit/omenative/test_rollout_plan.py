"""The rollout state machine, pass by pass, with an injected clock and observed pods."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

from ome.omenative import rollout_budget as budget
from ome.omenative import rollout_plan as rp
from ome.omenative.pods_view import PodView, format_time
from ome.omenative.revisions import from_spec, revision_hash
from ome.omenative.rollout_pods import RolloutPod
from ome.omenative.rollout_retry import RELEASE_ANNOTATION, RetryPolicy
from tests.unit.omenative import builders

NOW = datetime(2026, 9, 27, 8, 0, 0, tzinfo=UTC)
OLD = from_spec({"runners": builders.runners(image="img:1")})
NEW = from_spec({"runners": builders.runners(image="img:2")})
ENV = from_spec(
    {"runners": [{**builders.runners()[0], "template": builders.template("img:1", hostIPC=True)}]}
)
assert OLD is not None and NEW is not None and ENV is not None
H_OLD, H_NEW, H_ENV = revision_hash(OLD), revision_hash(NEW), revision_hash(ENV)
R_OLD, R_NEW, R_ENV = f"chat-engine-{H_OLD}", f"chat-engine-{H_NEW}", f"chat-engine-{H_ENV}"
Row = dict[str, Any]


def pod(
    index: int,
    ordinal: int = 0,
    *,
    digest: str = H_OLD,
    incarnation: int = 1,
    gate: str | None = "True",
    ready: bool | None = None,
    containers_ready: bool = True,
    terminating: bool = False,
    grace_ends: datetime | None = None,
    created: datetime = NOW - timedelta(hours=1),
    waiting: str | None = None,
    ready_since: datetime = NOW - timedelta(hours=1),
    image: str | None = None,
) -> RolloutPod:
    is_ready = (gate == "True" and containers_ready) if ready is None else ready
    view = PodView(
        name=f"chat-engine-{index}-default-{ordinal}",
        index=index,
        runner="default",
        incarnation=incarnation,
        revision_hash=digest,
        phase="Pending" if waiting else "Running",
        terminating=terminating,
        containers_ready=containers_ready and not waiting,
        gate=gate,
        ready=is_ready and not waiting,
        ready_since=format_time(ready_since) if is_ready else None,
        has_ip=True,
        restarted_at=None,
    )
    images = {"ome-container": image or ("img:2" if digest == H_NEW else "img:1")}
    return RolloutPod(
        view,
        created,
        grace_ends if terminating else None,
        waiting,
        "ome-container" if waiting else None,
        None,
        images,
    )


def ready_row(index: int, revision: str = R_OLD, **extra: Any) -> Row:
    return {
        "index": index,
        "incarnation": 1,
        "phase": "Ready",
        "runningRevision": revision,
        "targetRevision": revision,
        "readySince": "2026-09-27T07:00:00Z",
        **extra,
    }


def inputs(
    rows: list[Row],
    pods: list[RolloutPod],
    *,
    type_: str = "SurgeThenDrain",
    max_surge: Any = 1,
    max_unavailable: Any = None,
    partition: int = 0,
    target: str = R_NEW,
    **kw: Any,
) -> rp.Inputs:
    strategy = budget.Strategy(type_, max_surge, max_unavailable, partition, kw.pop("mark_not_ready", True))
    return rp.Inputs(
        namespace="prod",
        replica="chat-engine",
        base="chat",
        component="engine",
        desired=len(rows) or 1,
        update_revision=target,
        revisions={H_OLD: OLD, H_NEW: NEW, H_ENV: ENV},
        rows=rows,
        pods=pods,
        strategy=strategy,
        retry_blocks=kw.pop("blocks", []),
        policy=kw.pop("policy", RetryPolicy(max_attempts=3)),
        now=kw.pop("now", NOW),
        ready_timeout=kw.pop("ready_timeout", 1800.0),
        **kw,
    )


def three() -> tuple[list[Row], list[RolloutPod]]:
    return [ready_row(i) for i in range(3)], [pod(i) for i in range(3)]


# -- SurgeThenDrain -----------------------------------------------------------------------------------


def test_surge_starts_one_instance_per_slot_and_holds_the_rest_on_the_budget() -> None:
    rows, pods = three()
    out = rp.plan(inputs(rows, pods))
    assert sorted(out.rows) == [0]
    row = out.rows[0]
    assert row["phase"] == "Updating" and row["targetRevision"] == R_NEW and row["runningRevision"] == R_OLD
    op = row["operation"]
    assert (op["type"], op["step"], op["strategy"], op["targetRevision"]) == (
        "Update",
        "Surge",
        "SurgeThenDrain",
        R_NEW,
    )
    assert op["deadline"] == "2026-09-27T08:30:00Z"
    assert out.creates == [rp.PodCreate(0, 1, H_NEW, "default", 1)]  # the other ordinal
    assert out.rollout_hold == {
        "gate": "Budget",
        "reason": "per-Component surge budget 1 exhausted (would become 2)",
        "since": "2026-09-27T08:00:00Z",
        "target": R_NEW,
    }


def test_percent_surge_budget_rounds_up() -> None:
    rows, pods = three()
    out = rp.plan(inputs(rows, pods, max_surge="10%"))  # 10% of 3 is 1
    assert sorted(out.rows) == [0]
    assert sorted(rp.plan(inputs(rows, pods, max_surge=None)).rows) == [0, 1, 2]  # no cap


def surging(step: str = "Surge", **op: Any) -> Row:
    return {
        **ready_row(0),
        "phase": "Updating",
        "targetRevision": R_NEW,
        "operation": {
            "id": "0-1-update",
            "type": "Update",
            "step": step,
            "startedAt": "2026-09-27T07:59:00Z",
            "lastProgressAt": "2026-09-27T07:59:00Z",
            "targetRevision": R_NEW,
            "strategy": "SurgeThenDrain",
            "deadline": "2026-09-27T08:29:00Z",
            **op,
        },
    }


def test_new_pod_enters_rotation_then_the_old_one_drains_after_min_ready_seconds() -> None:
    new_pod = pod(0, 1, digest=H_NEW, gate=None, created=NOW - timedelta(seconds=30))
    out = rp.plan(inputs([surging()], [pod(0), new_pod]))
    assert out.open_gates == ["chat-engine-0-default-1"] and not out.close_gates and not out.rows
    serving = pod(
        0, 1, digest=H_NEW, created=NOW - timedelta(seconds=30), ready_since=NOW - timedelta(seconds=10)
    )
    waiting = rp.plan(inputs([surging()], [pod(0), serving], min_ready_seconds=30))
    assert not waiting.close_gates and waiting.wake_after == 20.0
    out = rp.plan(inputs([surging()], [pod(0), serving], min_ready_seconds=10))
    assert out.rows[0]["operation"]["step"] == "SurgeDrain" and out.close_gates == ["chat-engine-0-default-0"]
    # The drain follows the close in the same pass (the reconciler chains them), without waiting for
    # the kubelet to turn Ready False; the update finishes once the cache shows the gate closed.
    assert out.deletes == ["chat-engine-0-default-0"] and out.rows[0]["phase"] == "Updating"
    closed = rp.plan(inputs([out.rows[0]], [pod(0, gate="False"), serving]))
    assert closed.deletes == ["chat-engine-0-default-0"] and closed.rows[0]["phase"] == "Ready"
    drained = pod(0, gate="False", ready=False)
    done = rp.plan(inputs([out.rows[0]], [drained, serving]))
    assert done.deletes == ["chat-engine-0-default-0"]
    row = done.rows[0]
    assert row["phase"] == "Ready" and row["runningRevision"] == R_NEW and row["activeOrdinal"] == 1
    assert "operation" not in row and row["readySince"] == "2026-09-27T08:00:00Z"


def test_a_second_update_goes_back_to_ordinal_zero() -> None:
    row = ready_row(0, R_NEW, activeOrdinal=1)
    out = rp.plan(inputs([row], [pod(0, 1, digest=H_NEW)], target=R_ENV))
    assert out.creates == [rp.PodCreate(0, 1, H_ENV, "default", 0)]


def test_terminating_pod_holds_its_surge_slot_until_its_grace_elapses() -> None:
    rows = [ready_row(0, R_NEW, activeOrdinal=1), ready_row(1), ready_row(2)]
    ends = NOW + timedelta(seconds=45)
    pods = [
        pod(0, 1, digest=H_NEW),
        pod(0, 0, terminating=True, grace_ends=ends, gate="False"),
        pod(1),
        pod(2),
    ]
    out = rp.plan(inputs(rows, pods))
    assert not out.rows and out.wake_after == 45.0
    assert out.rollout_hold is not None and out.rollout_hold["reason"] == (
        "per-Component surge budget 1 exhausted (would become 2); Terminating pod chat-engine-0-default-0 still "
        "counts against the surge budget until its deletion grace elapses"
    )
    later = rp.plan(inputs(rows, pods, now=ends))
    assert sorted(later.rows) == [1]  # Instance 2 now waits for Instance 1's slot
    assert later.rollout_hold is not None
    assert later.rollout_hold["reason"] == "per-Component surge budget 1 exhausted (would become 2)"


def test_hold_keeps_its_since_while_unchanged() -> None:
    rows, pods = three()
    first = rp.plan(inputs(rows, pods)).rollout_hold
    again = rp.plan(inputs([surging(), *rows[1:]], pods, previous_hold=first, now=NOW + timedelta(minutes=1)))
    assert again.rollout_hold is not None and again.rollout_hold["since"] == "2026-09-27T08:00:00Z"


def test_image_pull_failure_of_the_new_pod_keeps_the_old_one_serving_and_backs_off() -> None:
    bad = pod(0, 1, digest=H_NEW, gate=None, waiting="ImagePullBackOff", created=NOW - timedelta(seconds=20))
    out = rp.plan(inputs([surging()], [pod(0), bad]))
    row = out.rows[0]
    assert row["phase"] == "Ready" and row["runningRevision"] == R_OLD and "operation" not in row
    assert row["lastFailure"] == {
        "podName": "chat-engine-0-default-1",
        "reason": "ImagePullBackOff",
        "time": "2026-09-27T08:00:00Z",
        "containerName": "ome-container",
    }
    assert not out.deletes and not out.close_gates  # the old pod keeps serving; the new one is left
    assert out.retry_blocks == [
        {
            "targetRevision": R_NEW,
            "attemptsStarted": 1,
            "firstFailureAt": "2026-09-27T08:00:00Z",
            "lastFailureAt": "2026-09-27T08:00:00Z",
            "reason": "ImagePullBackOff",
            "state": "Backoff",
            "nextRetryAt": "2026-09-27T08:01:00Z",
        }
    ]
    assert out.wake_after == 60.0


def test_left_over_pod_holds_a_slot_and_the_next_start_on_its_instance_evicts_it() -> None:
    rows = [ready_row(0, lastFailure={"podName": "x", "reason": "ImagePullBackOff"}), ready_row(1)]
    leftover = pod(0, 1, digest=H_NEW, gate=None, waiting="ImagePullBackOff")
    block = {
        "targetRevision": R_NEW,
        "state": "Backoff",
        "attemptsStarted": 1,
        "nextRetryAt": "2026-09-27T07:59:00Z",
    }
    out = rp.plan(inputs(rows, [pod(0), leftover, pod(1)], blocks=[block]))
    assert sorted(out.rows) == [0]  # the retry starts where the extra pod is: it is not charged twice
    assert out.deletes == ["chat-engine-0-default-1", "chat-engine-0-default-1"] and not out.creates
    assert out.retry_blocks[0]["state"] == "RetryInProgress" and out.retry_blocks[0]["attemptsStarted"] == 2
    # Meanwhile a start elsewhere is denied, naming the pod.
    other = rp.plan(inputs(rows, [pod(0), leftover, pod(1)], max_surge=1))
    assert other.rollout_hold is not None and other.rollout_hold["gate"] == "Budget"
    assert other.rollout_hold["reason"].endswith(
        "; extra pod chat-engine-0-default-1 holds a surge slot until a start on its Instance replaces it"
    )


def test_retries_run_out_and_the_revision_is_held_with_a_retry_held_event() -> None:
    block = {
        "targetRevision": R_NEW,
        "state": "RetryInProgress",
        "attemptsStarted": 3,
        "firstFailureAt": "2026-09-27T07:50:00Z",
    }
    bad = pod(0, 1, digest=H_NEW, gate=None, waiting="ErrImagePull", created=NOW - timedelta(seconds=5))
    out = rp.plan(inputs([surging(), ready_row(1)], [pod(0), bad, pod(1)], blocks=[block]))
    assert out.retry_blocks[0]["state"] == "Held"
    assert (
        "Warning",
        "RetryHeld",
        f"InferenceReplica prod/chat-engine component=engine update to revision {R_NEW} held after 3 failed "
        "attempt(s) (last failure: ErrImagePull); publish a corrected revision or raise lifecycle.updateRetry "
        "limits",
    ) in out.events
    held = rp.plan(inputs([out.rows[0], ready_row(1)], [pod(0), bad, pod(1)], blocks=out.retry_blocks))
    assert not held.rows and held.rollout_hold is not None and held.rollout_hold["gate"] == "Held"
    assert held.rollout_hold["reason"] == f"update to {R_NEW} held after 3 failed attempt(s): ErrImagePull"


def test_release_annotation_removes_the_held_block_and_the_rollout_resumes() -> None:
    rows, pods = three()
    block = {"targetRevision": R_NEW, "state": "Held", "attemptsStarted": 3, "reason": "ImagePullBackOff"}
    out = rp.plan(inputs(rows, pods, blocks=[block], annotations={RELEASE_ANNOTATION: H_NEW}))
    assert out.release_answered and out.retry_blocks == [] and sorted(out.rows) == [0]
    assert out.events[0][1] == "RetryBlockReleased"


def test_a_newer_revision_replaces_a_hold() -> None:
    rows, pods = three()
    block = {"targetRevision": R_ENV, "state": "Held", "attemptsStarted": 1, "reason": "InvalidImageName"}
    out = rp.plan(inputs(rows, pods, blocks=[block]))
    assert out.retry_blocks == [] and sorted(out.rows) == [0]


def test_deadline_fails_the_attempt_without_counting_against_the_revision() -> None:
    slow = pod(0, 1, digest=H_NEW, gate=None, containers_ready=False, created=NOW - timedelta(minutes=40))
    out = rp.plan(inputs([surging()], [pod(0), slow], now=NOW + timedelta(minutes=30), policy=RetryPolicy()))
    assert out.rows[0]["lastFailure"]["reason"] == "DeadlineExceeded"
    assert out.retry_blocks[0]["state"] == "Backoff"  # even with maxAttempts 1


def test_unschedulable_past_the_grace_fails_the_attempt_as_a_cluster_fault() -> None:
    stuck = dataclasses.replace(
        pod(0, 1, digest=H_NEW, gate=None, containers_ready=False, created=NOW - timedelta(minutes=19)),
        unschedulable_since=NOW - timedelta(minutes=16),
    )
    row = surging(startedAt="2026-09-27T07:40:00Z")
    out = rp.plan(inputs([row], [pod(0), stuck], unschedulable_grace=900.0, policy=RetryPolicy()))
    assert (
        out.rows[0]["lastFailure"]["reason"] == "Unschedulable" and out.retry_blocks[0]["state"] == "Backoff"
    )


# -- pause and strategy changes ---------------------------------------------------------------------


def test_pause_starts_nothing_and_stops_a_surge_before_the_drain() -> None:
    rows, pods = three()
    assert not rp.plan(inputs(rows, pods, paused=True)).rows
    serving = pod(0, 1, digest=H_NEW, created=NOW - timedelta(seconds=30))
    out = rp.plan(inputs([surging(), *rows[1:]], [*pods, serving], paused=True))
    assert out.rows[0]["operation"]["waiting"] == "Paused" and not out.close_gates
    # The clock stops while paused: the deadline restarts in full on resume.
    late = NOW + timedelta(hours=2)
    resumed = rp.plan(inputs([out.rows[0], *rows[1:]], [*pods, serving], now=late))
    op = resumed.rows[0]["operation"]
    assert "waiting" not in op and op["deadline"] == format_time(late + timedelta(minutes=30))
    assert op["step"] == "SurgeDrain"


def test_moving_instance_finishes_with_the_strategy_it_started_with() -> None:
    serving = pod(0, 1, digest=H_NEW, created=NOW - timedelta(seconds=30))
    out = rp.plan(
        inputs([surging(), ready_row(1)], [pod(0), serving, pod(1)], type_="RecreatePod", max_unavailable=1)
    )
    assert out.rows[0]["operation"]["step"] == "SurgeDrain"
    # ... and the next Instance uses the new one.
    assert out.rows[1]["operation"]["strategy"] == "RecreatePod"


# -- RecreatePod ------------------------------------------------------------------------------------


def test_recreate_drains_then_recreates_at_the_next_incarnation_within_max_unavailable() -> None:
    rows, pods = three()
    out = rp.plan(inputs(rows, pods, type_="RecreatePod", max_unavailable=1))
    assert sorted(out.rows) == [0] and out.rows[0]["incarnation"] == 2
    assert out.rows[0]["operation"]["step"] == "Drain" and out.close_gates == ["chat-engine-0-default-0"]
    assert out.rollout_hold is not None
    assert out.rollout_hold["reason"] == "per-Component unavailability budget 1 exhausted (would become 2)"
    moving = out.rows[0]
    gone = rp.plan(inputs([moving, *rows[1:]], pods[1:], type_="RecreatePod", max_unavailable=1))
    assert (
        gone.creates == [rp.PodCreate(0, 2, H_NEW, "default", 0)] and gone.rows[0]["runningRevision"] == R_NEW
    )
    fresh = pod(0, digest=H_NEW, incarnation=2, gate=None)
    opened = rp.plan(
        inputs([gone.rows[0], *rows[1:]], [fresh, *pods[1:]], type_="RecreatePod", max_unavailable=1)
    )
    assert opened.open_gates == ["chat-engine-0-default-0"]
    serving = pod(0, digest=H_NEW, incarnation=2)
    done = rp.plan(
        inputs([gone.rows[0], *rows[1:]], [serving, *pods[1:]], type_="RecreatePod", max_unavailable=1)
    )
    assert done.rows[0]["phase"] == "Ready" and done.rows[0]["runningRevision"] == R_NEW
    assert sorted(done.rows) == [0]  # Instance 0 still counts as moving in this pass's budget


def test_zero_budget_moves_nothing() -> None:
    rows, pods = three()
    out = rp.plan(inputs(rows, pods, type_="InPlaceIfPossible", max_unavailable=0))
    assert not out.rows and out.rollout_hold is not None
    assert out.rollout_hold["reason"] == "per-Component unavailability budget 0 exhausted (would become 1)"


def test_partition_keeps_the_lowest_indices_on_the_old_revision() -> None:
    rows, pods = three()
    out = rp.plan(inputs(rows, pods, max_surge=None, partition=1))
    assert sorted(out.rows) == [1, 2]


# -- in place ---------------------------------------------------------------------------------------


def test_in_place_if_possible_patches_images_of_the_running_pod() -> None:
    rows, pods = [ready_row(0)], [pod(0)]
    out = rp.plan(inputs(rows, pods, type_="InPlaceIfPossible", max_unavailable=1))
    row = out.rows[0]
    assert row["operation"]["step"] == "InPlace" and row["incarnation"] == 1
    assert out.close_gates == ["chat-engine-0-default-0"] and not out.image_patches
    drained = pod(0, gate="False", ready=False)
    patch = rp.plan(inputs([row], [drained], type_="InPlaceIfPossible", max_unavailable=1))
    assert patch.image_patches == [("chat-engine-0-default-0", H_NEW)]
    patched = pod(0, digest=H_NEW, gate="False", ready=False)
    back = rp.plan(inputs([row], [patched], type_="InPlaceIfPossible", max_unavailable=1))
    assert back.open_gates == ["chat-engine-0-default-0"]
    done = rp.plan(inputs([row], [pod(0, digest=H_NEW)], type_="InPlaceIfPossible", max_unavailable=1))
    assert done.rows[0]["phase"] == "Ready" and done.rows[0]["runningRevision"] == R_NEW
    assert not done.creates and not done.deletes


def test_in_place_without_mark_not_ready_patches_at_once() -> None:
    out = rp.plan(
        inputs([ready_row(0)], [pod(0)], type_="InPlaceOnly", max_unavailable=1, mark_not_ready=False)
    )
    assert out.image_patches == [("chat-engine-0-default-0", H_NEW)] and not out.close_gates


def test_in_place_if_possible_recreates_for_other_changes() -> None:
    out = rp.plan(
        inputs([ready_row(0)], [pod(0)], type_="InPlaceIfPossible", max_unavailable=1, target=R_ENV)
    )
    assert out.rows[0]["operation"]["step"] == "Drain" and out.rows[0]["incarnation"] == 2


def test_in_place_only_refuses_other_changes_once() -> None:
    out = rp.plan(inputs([ready_row(0)], [pod(0)], type_="InPlaceOnly", max_unavailable=1, target=R_ENV))
    assert out.events == [
        (
            "Warning",
            "InPlaceUpdateNotPossible",
            "OMENative component=engine instance=0 rejected update: InPlaceOnly strategy but diff "
            "exceeds container images",
        )
    ]
    row = out.rows[0]
    assert row["phase"] == "Ready" and row["runningRevision"] == R_OLD and "operation" not in row
    again = rp.plan(inputs([row], [pod(0)], type_="InPlaceOnly", max_unavailable=1, target=R_ENV))
    assert not again.events and not again.rows and not again.creates


def test_a_failed_recreate_is_retried_with_new_pods_once_the_backoff_allows() -> None:
    failed = {
        **ready_row(0, R_NEW),
        "phase": "Failed",
        "incarnation": 2,
        "operation": {
            "type": "Update",
            "step": "Drain",
            "targetRevision": R_NEW,
            "strategy": "RecreatePod",
            "startedAt": "2026-09-27T07:00:00Z",
            "lastProgressAt": "2026-09-27T07:00:00Z",
            "id": "x",
        },
    }
    block = {
        "targetRevision": R_NEW,
        "state": "Backoff",
        "attemptsStarted": 1,
        "nextRetryAt": "2026-09-27T08:05:00Z",
    }
    bad = pod(0, digest=H_NEW, incarnation=2, gate=None, waiting="CreateContainerConfigError")
    early = rp.plan(inputs([failed], [bad], type_="RecreatePod", max_unavailable=1, blocks=[block]))
    assert not early.rows and early.rollout_hold is not None and early.rollout_hold["gate"] == "RetryBlock"
    assert early.wake_after == 300.0
    due = rp.plan(
        inputs(
            [failed],
            [bad],
            type_="RecreatePod",
            max_unavailable=1,
            blocks=[block],
            now=NOW + timedelta(minutes=5),
        )
    )
    row = due.rows[0]
    assert row["phase"] == "Updating" and row["incarnation"] == 3 and row["operation"]["retryCount"] == 1
    assert due.deletes == ["chat-engine-0-default-0"]


# -- gang surge -------------------------------------------------------------------------------------

GANG_OLD = from_spec({"runners": builders.runners(workers=2, image="img:1")})
GANG_NEW = from_spec({"runners": builders.runners(workers=2, image="img:2")})
assert GANG_OLD is not None and GANG_NEW is not None
G_OLD, G_NEW = revision_hash(GANG_OLD), revision_hash(GANG_NEW)


def gang_pods(index: int, digest: str, **kw: Any) -> list[RolloutPod]:
    out = []
    for runner, ordinal in (("leader", 0), ("worker", 0), ("worker", 1)):
        p = pod(index, ordinal, digest=digest, **kw)
        name = f"chat-engine-{index}-{runner}-{ordinal}"
        out.append(dataclasses.replace(p, view=dataclasses.replace(p.view, name=name, runner=runner)))
    return out


def gang_inputs(rows: list[Row], pods: list[RolloutPod], **kw: Any) -> rp.Inputs:
    base = inputs(rows, pods, target=f"chat-engine-{G_NEW}", **kw)
    return dataclasses.replace(base, desired=1, revisions={G_OLD: GANG_OLD, G_NEW: GANG_NEW})


def test_gang_surge_starts_a_whole_replacement_at_a_new_index_then_drains_the_source() -> None:
    old_rev, new_rev = f"chat-engine-{G_OLD}", f"chat-engine-{G_NEW}"
    source = ready_row(0, old_rev)
    out = rp.plan(gang_inputs([source], gang_pods(0, G_OLD)))
    assert out.rows[0]["operation"]["surgeIndex"] == 1 and out.rows[0]["phase"] == "Updating"
    target = out.rows[1]
    assert (target["phase"], target["incarnation"], target["operation"]["step"]) == (
        "Creating",
        1,
        "GangSurgeTarget",
    )
    assert sorted((c.runner, c.ordinal, c.index) for c in out.creates) == [
        ("leader", 0, 1),
        ("worker", 0, 1),
        ("worker", 1, 1),
    ]
    rows = [out.rows[0], target]
    ready = gang_pods(1, G_NEW, gate=None, created=NOW)
    opened = rp.plan(gang_inputs(rows, [*gang_pods(0, G_OLD), *ready]))
    assert sorted(opened.open_gates) == [
        "chat-engine-1-leader-0",
        "chat-engine-1-worker-0",
        "chat-engine-1-worker-1",
    ]
    serving = gang_pods(1, G_NEW, created=NOW)
    drain = rp.plan(gang_inputs(rows, [*gang_pods(0, G_OLD), *serving]))
    assert drain.rows[0]["operation"]["step"] == "SurgeDrain" and len(drain.close_gates) == 3
    drained = gang_pods(0, G_OLD, gate="False", ready=False)
    deleting = rp.plan(gang_inputs([drain.rows[0], target], [*drained, *serving]))
    assert len(deleting.deletes) == 3 and not deleting.removed
    done = rp.plan(gang_inputs([drain.rows[0], target], serving))
    assert done.removed == [0]
    promoted = done.rows[1]
    assert (
        promoted["phase"] == "Ready"
        and promoted["runningRevision"] == new_rev
        and "operation" not in promoted
    )


def test_a_failed_replacement_is_abandoned_and_the_source_keeps_serving() -> None:
    old_rev = f"chat-engine-{G_OLD}"
    start = rp.plan(gang_inputs([ready_row(0, old_rev)], gang_pods(0, G_OLD)))
    rows = [start.rows[0], start.rows[1]]
    bad = gang_pods(1, G_NEW, gate=None, waiting="ImagePullBackOff", created=NOW)
    out = rp.plan(gang_inputs(rows, [*gang_pods(0, G_OLD), *bad]))
    assert out.rows[0]["phase"] == "Ready" and out.rows[0]["runningRevision"] == old_rev
    assert out.rows[1]["operation"]["step"] == "GangSurgeTargetCleanup" and len(out.deletes) == 3
    assert out.events[0] == (
        "Warning",
        "GangSurgeAbandoned",
        f"OMENative component=engine instance=0 abandoned failed gang surge (surge-index=1); resetting to revision "
        f"{old_rev} for a fresh rollout",
    )
    gone = rp.plan(gang_inputs([out.rows[0], out.rows[1]], gang_pods(0, G_OLD), blocks=out.retry_blocks))
    assert gone.removed == [1]


# -- crash-loop repair ------------------------------------------------------------------------------


def test_a_pod_wedged_past_the_stuck_pod_grace_restarts_its_instance() -> None:
    rows = [ready_row(i, R_NEW) for i in range(3)]
    stuck = pod(1, digest=H_NEW, gate="True", waiting="CrashLoopBackOff", created=NOW - timedelta(seconds=61))
    pods = [pod(0, digest=H_NEW), stuck, pod(2, digest=H_NEW)]
    out = rp.plan(inputs(rows, pods, stuck_grace=60.0))
    row = out.rows[1]
    assert (row["phase"], row["incarnation"], row["operation"]["type"]) == ("Restarting", 2, "Restart")
    assert row["lastFailure"]["reason"] == "CrashLoopBackOff"
    assert out.events == [
        (
            "Warning",
            "RestartTriggered",
            "OMENative component=engine instance=1 restart triggered: pod chat-engine-1-default-0 "
            "wedged in CrashLoopBackOff past the stuck-pod grace (incarnation=2)",
        )
    ]
    young = dataclasses.replace(stuck, created=NOW - timedelta(seconds=20))
    waiting = rp.plan(inputs(rows, [pods[0], young, pods[2]], stuck_grace=60.0))
    assert not waiting.rows and waiting.wake_after == 40.0
    assert not rp.plan(inputs(rows, pods)).rows  # no grace period: the repair is off
    assert not rp.plan(inputs(rows, pods, stuck_grace=60.0, paused=True, freeze=True)).rows


def test_repairs_are_paced_by_max_unavailable_with_one_repair_held_warning() -> None:
    rows = [{**ready_row(0, R_NEW), "phase": "Restarting", "incarnation": 2}, ready_row(1, R_NEW)]
    stuck = pod(1, digest=H_NEW, waiting="ImagePullBackOff", created=NOW - timedelta(minutes=5))
    out = rp.plan(inputs(rows, [stuck], max_unavailable=1, stuck_grace=60.0))
    assert out.rows[1]["phase"] == "Ready" and out.rows[1]["announced"] == ["RepairHeld"]
    assert out.events == [
        (
            "Warning",
            "RepairHeld",
            "OMENative component=engine instance=1 crash-loop repair held by Budget: per-Component "
            "unavailability budget 1 exhausted (would become 2)",
        )
    ]
    again = rp.plan(inputs([rows[0], out.rows[1]], [stuck], max_unavailable=1, stuck_grace=60.0))
    assert not again.events


def test_an_unschedulable_surge_pod_stops_the_operation_clock() -> None:
    pending = dataclasses.replace(
        pod(0, 1, digest=H_NEW, gate=None, containers_ready=False, created=NOW - timedelta(minutes=50)),
        unschedulable_since=NOW - timedelta(minutes=50),
    )
    late = NOW + timedelta(hours=1)  # well past the operation's deadline
    out = rp.plan(inputs([surging(startedAt="2026-09-27T07:00:00Z")], [pod(0), pending], now=late))
    row = out.rows[0]
    assert row["phase"] == "Updating" and row["operation"]["waiting"] == "Unschedulable"
    placed = dataclasses.replace(pending, unschedulable_since=None)
    resumed = rp.plan(inputs([row], [pod(0), placed], now=late))
    op = resumed.rows[0]["operation"]
    assert "waiting" not in op and op["deadline"] == format_time(late + timedelta(minutes=30))


def test_a_recreate_whose_new_pod_cannot_pull_fails_the_instance_with_an_instance_failed_event() -> None:
    """The old pod is gone, so the Instance is Failed, and the InferenceService gets the InstanceFailed
    warning the replica controller's own operations record (troubleshoot: InstanceFailed ends with the
    kubelet reason)."""
    rows, pods = three()
    moving = rp.plan(inputs(rows, pods, type_="RecreatePod", max_unavailable=1)).rows[0]
    gone = rp.plan(inputs([moving, *rows[1:]], pods[1:], type_="RecreatePod", max_unavailable=1)).rows[0]
    bad = pod(0, digest=H_NEW, incarnation=2, gate=None, waiting="ImagePullBackOff")
    out = rp.plan(inputs([gone, *rows[1:]], [bad, *pods[1:]], type_="RecreatePod", max_unavailable=1))
    assert out.rows[0]["phase"] == "Failed"
    failed = [m for kind, reason, m in out.events if (kind, reason) == ("Warning", "InstanceFailed")]
    assert failed == ['InferenceReplica prod/chat-engine component=engine instance=0 escalated to '
                      'Phase=Failed (pod="chat-engine-0-default-0"): ImagePullBackOff']


def test_a_surge_whose_new_pod_cannot_pull_records_no_instance_failed() -> None:
    """A surge keeps the old pod serving: the Instance stays Ready, so nothing escalated to Failed."""
    bad = pod(0, 1, digest=H_NEW, gate=None, waiting="ImagePullBackOff", created=NOW - timedelta(seconds=20))
    out = rp.plan(inputs([surging()], [pod(0), bad]))
    assert out.rows[0]["phase"] == "Ready"
    assert [r for _, r, _ in out.events if r == "InstanceFailed"] == []
