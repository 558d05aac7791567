"""A starting Instance fails early on its pods' evidence, as concepts/omenative/instances.md §When an
Instance fails documents: "Stuck pod | A container waits in a state such as `CrashLoopBackOff` or
`ImagePullBackOff`, and its pod is older than the grace period | `stuckPodGracePeriod`" and "No room | The
scheduler can't place a pod for longer than the grace period | `unschedulableGracePeriod`". The
InstanceFailed message ends with "A kubelet reason, such as `CrashLoopBackOff` or `ImagePullBackOff`" or
"`Unschedulable:`" (troubleshoot-an-inferenceservice.md §Instances fail or never become ready)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ome.cmd import wiring
from ome.config import inferenceservice_config as cfg
from ome.omenative import instance_names as names
from ome.omenative import instances, operation_holds, revisions
from ome.omenative.pods_view import PodView, format_time, view
from tests.unit.omenative.builders import replica

T0 = datetime(2026, 1, 1, 0, 0, tzinfo=UTC)
POD = "chat-engine-0-default-0"
SCHEDULER = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu"
PULL = 'Back-off pulling image "img:bad"'
PREFIX = f'InferenceReplica ns/chat-engine component=engine instance=0 escalated to Phase=Failed (pod="{POD}"): '


def ctx(now: datetime, *, stuck: float | None = 60.0, unschedulable: float | None = 900.0) -> instances.Context:
    data = revisions.from_spec(replica()["spec"])
    assert data is not None
    return instances.Context(
        base="chat", component="engine", desired=1, update_revision="chat-engine-abc", update_hash="abc",
        revisions={"abc": data}, now=now, ready_timeout=1800.0, drain_timeout=600.0, replica="ns/chat-engine",
        stuck_grace=stuck, unschedulable_grace=unschedulable,
    )


def row(phase: str = "Creating", kind: str = "Create", **operation: Any) -> dict[str, Any]:
    op = {"id": "0-1-create", "type": kind, "step": "CreatePods", "startedAt": format_time(T0),
          "lastProgressAt": format_time(T0), "deadline": format_time(T0 + timedelta(minutes=30)), **operation}
    return {"index": 0, "incarnation": 1, "phase": phase, "runningRevision": "chat-engine-abc",
            "targetRevision": "chat-engine-abc", "operation": op}


def raw(*, created: datetime = T0, waiting: str | None = None, init_waiting: str | None = None,
        unschedulable_since: datetime | None = None) -> PodView:
    """A pod of Instance 0 as the cache holds it, read through `view`."""
    status: dict[str, Any] = {"phase": "Pending"}
    if waiting:
        status["containerStatuses"] = [
            {"name": "ome-container", "state": {"waiting": {"reason": waiting, "message": PULL}}}]
    if init_waiting:
        status["initContainerStatuses"] = [{"name": "fetch", "state": {"waiting": {"reason": init_waiting}}}]
    if unschedulable_since is not None:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                 "message": SCHEDULER, "lastTransitionTime": format_time(unschedulable_since)}]
    labels = {names.INSTANCE_INDEX_LABEL: "0", names.INCARNATION_LABEL: "1", names.RUNNER_LABEL: "default",
              names.REVISION_HASH_LABEL: "abc"}
    pod = view({"metadata": {"name": POD, "labels": labels, "creationTimestamp": format_time(created)},
                "status": status})
    assert pod is not None
    return pod


def failed_events(plan: instances.Plan) -> list[str]:
    return [message for kind, reason, message in plan.events if (kind, reason) == ("Warning", "InstanceFailed")]


def test_image_pull_backoff_fails_a_creating_instance_once_the_pod_is_older_than_the_grace() -> None:
    pod = raw(waiting="ImagePullBackOff")
    before = instances.plan(ctx(T0 + timedelta(seconds=59)), [row()], [pod])
    assert before.rows[0]["phase"] == "Creating" and failed_events(before) == []
    assert before.wake_after == 1  # the grace's end, not the deadline's: no polling

    after = instances.plan(ctx(T0 + timedelta(seconds=60)), [row()], [pod])
    assert after.rows[0]["phase"] == "Failed"
    assert after.rows[0]["lastFailure"] == {
        "podName": POD, "containerName": "ome-container", "reason": "ImagePullBackOff", "message": PULL,
        "time": "2026-01-01T00:01:00Z"}
    assert failed_events(after) == [PREFIX + "ImagePullBackOff"]


@pytest.mark.parametrize("reason", ["CrashLoopBackOff", "ErrImagePull", "CreateContainerConfigError",
                                    "InvalidImageName", "CreateContainerError", "RunContainerError"])
def test_every_terminal_waiting_reason_fails_a_restart_too(reason: str) -> None:
    plan = instances.plan(ctx(T0 + timedelta(minutes=2)), [row("Restarting", "Restart", step="Drain")],
                          [raw(waiting=reason)])
    assert plan.rows[0]["phase"] == "Failed" and plan.rows[0]["lastFailure"]["reason"] == reason
    assert failed_events(plan) == [PREFIX + reason]


def test_a_wedged_init_container_counts_and_a_passing_wait_does_not() -> None:
    plan = instances.plan(ctx(T0 + timedelta(minutes=2)), [row()], [raw(init_waiting="CreateContainerConfigError")])
    assert plan.rows[0]["lastFailure"]["containerName"] == "fetch"
    creating = instances.plan(ctx(T0 + timedelta(minutes=2)), [row()], [raw(waiting="ContainerCreating")])
    assert creating.rows[0]["phase"] == "Creating" and failed_events(creating) == []


def test_an_unschedulable_pod_fails_the_instance_after_the_unschedulable_grace() -> None:
    # The grace runs from PodScheduled's transition, not from the pod's creation.
    pod = raw(created=T0 - timedelta(hours=2), unschedulable_since=T0)
    before = instances.plan(ctx(T0 + timedelta(seconds=899)), [row()], [pod])
    assert before.rows[0]["phase"] == "Creating" and failed_events(before) == []
    assert before.wake_after == 1

    after = instances.plan(ctx(T0 + timedelta(minutes=15)), [row()], [pod])
    assert after.rows[0]["phase"] == "Failed"
    assert after.rows[0]["lastFailure"] == {
        "podName": POD, "reason": "Unschedulable", "message": SCHEDULER, "time": "2026-01-01T00:15:00Z"}
    assert failed_events(after) == [PREFIX + f"Unschedulable: {SCHEDULER}"]


def test_without_the_graces_nothing_fails_before_the_deadline() -> None:
    pods = [raw(waiting="ImagePullBackOff")]
    unset = ctx(T0 + timedelta(minutes=29), stuck=None, unschedulable=None)
    plan = instances.plan(unset, [row()], pods)
    assert plan.rows[0]["phase"] == "Creating" and failed_events(plan) == []
    assert plan.wake_after == 60  # only the deadline is left to wait for
    late = instances.plan(ctx(T0 + timedelta(minutes=30), stuck=None, unschedulable=None), [row()], pods)
    assert late.rows[0]["lastFailure"]["reason"] == "DeadlineExceeded"
    assert failed_events(late)[0].startswith(PREFIX + "DeadlineExceeded: ")


def test_the_earliest_grace_end_is_the_wake() -> None:
    pods = [raw(created=T0 + timedelta(seconds=40), waiting="CrashLoopBackOff", unschedulable_since=T0)]
    plan = instances.plan(ctx(T0 + timedelta(seconds=50)), [row()], pods)
    assert plan.wake_after == 50  # the stuck-pod grace ends at T0+100s, before the unschedulable one


def test_a_ready_instance_or_a_held_operation_is_not_failed_here() -> None:
    late = ctx(T0 + timedelta(minutes=20))
    ready = {k: v for k, v in row("Ready").items() if k != "operation"}
    plan = instances.plan(late, [ready], [raw(waiting="CrashLoopBackOff")])
    assert plan.rows[0]["phase"] == "Ready" and failed_events(plan) == []  # rollout_repair's
    held = instances.plan(late, [row(waiting="QuotaExceeded")], [raw(waiting="ImagePullBackOff")])
    assert held.rows[0]["phase"] == "Creating" and failed_events(held) == []


def test_a_create_failed_by_a_stuck_pod_is_retried_after_the_usual_backoff() -> None:
    failed = instances.plan(ctx(T0 + timedelta(minutes=2)), [row()], [raw(waiting="ImagePullBackOff")]).rows[0]
    waiting = instances.plan(ctx(T0 + timedelta(minutes=2, seconds=59)), [failed], [raw(waiting="ImagePullBackOff")])
    assert waiting.deletes == [] and waiting.wake_after == 1
    retried = instances.plan(ctx(T0 + timedelta(minutes=3)), [failed], [raw(waiting="ImagePullBackOff")])
    assert retried.deletes == [POD]


def test_the_lifecycle_graces_reach_the_inferencereplica_controller() -> None:
    config = cfg.parse({"lifecycle": '{"stuckPodGracePeriod": "60s", "unschedulableGracePeriod": "15m"}'})
    settings = wiring.Settings(config, lws_served=False, config_namespace="ome").replica_settings()
    assert (settings.stuck_pod_grace_period, settings.unschedulable_grace_period) == (60.0, 900.0)
    unset = wiring.Settings(cfg.parse({}), lws_served=False, config_namespace="ome").replica_settings()
    assert (unset.stuck_pod_grace_period, unset.unschedulable_grace_period) == (None, None)


def test_waiting_for_room_stops_the_create_clock_and_the_grace_bounds_it() -> None:
    """"Waiting for the scheduler doesn't count" against the deadline: a starting Instance with a pod the
    scheduler cannot place waits as `Unschedulable`, fails past unschedulableGracePeriod, and once the pod is
    placed gets its full window again."""
    pod = raw(unschedulable_since=T0)
    assert instances.unschedulable_holds([row()], [pod]) == {0: "Unschedulable"}
    ready = {k: v for k, v in row("Ready").items() if k != "operation"}
    assert instances.unschedulable_holds([ready], [pod]) == {}  # no operation of its own to hold
    [held] = operation_holds.settle([row()], {0: "Unschedulable"}, T0, 1800.0)
    assert held["operation"]["waiting"] == "Unschedulable" and operation_holds.held(held)

    past_deadline = T0 + timedelta(minutes=40)
    unset = instances.plan(ctx(past_deadline, unschedulable=None), [held], [pod])
    assert unset.rows[0]["phase"] == "Creating" and failed_events(unset) == []
    bounded = instances.plan(ctx(T0 + timedelta(minutes=15)), [held], [pod])
    assert bounded.rows[0]["phase"] == "Failed" and failed_events(bounded) == [PREFIX + f"Unschedulable: {SCHEDULER}"]

    [placed] = operation_holds.settle([held], {}, past_deadline, 1800.0)
    assert "waiting" not in placed["operation"]
    assert placed["operation"]["deadline"] == format_time(past_deadline + timedelta(minutes=30))
