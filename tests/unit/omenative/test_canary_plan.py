"""Canary progression planning: steps, gates, phases, ready timeout, promote / rollback, held revisions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ome.omenative import canary_analysis as analysis
from ome.omenative import canary_plan as cp

T0 = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
NEW, OLD = "bbbbbbbb", "aaaaaaaa"


def steps(*items: dict[str, Any]) -> dict[str, Any]:
    return {"steps": list(items)}


MANUAL = steps(
    {"capacity": "25%", "traffic": 10, "pause": {}},
    {"capacity": "100%", "traffic": 100},
)


def inputs(
    canary: dict[str, Any],
    *,
    ready: int = 0,
    on: int | None = None,
    desired: int = 4,
    previous: dict[str, Any] | None = None,
    phase: str | None = None,
    annotations: dict[str, str] | None = None,
    now: datetime = T0,
    timeout: float | None = None,
    sample: analysis.Sample | None = None,
    target: str = NEW,
) -> cp.Inputs:
    return cp.Inputs(
        canary=canary,
        members={"engine": cp.Member(desired, ready, ready if on is None else on)},
        target_hash=target,
        stable_hash=OLD,
        previous=previous,
        phase=phase,
        annotations=annotations or {},
        now=now,
        ready_timeout=timeout,
        sample=sample,
    )


def advance(inp: cp.Inputs, plan: cp.Plan, **changes: Any) -> cp.Inputs:
    """The next pass sees what this one wrote."""
    fields = {name: getattr(inp, name) for name in cp.Inputs.__slots__}
    fields.update(previous=plan.status, phase=plan.phase)
    members = changes.pop("members", None)
    if members is not None:
        fields["members"] = members
    fields.update(changes)
    return cp.Inputs(**fields)


def engine(ready: int, on: int | None = None, desired: int = 4) -> dict[str, cp.Member]:
    return {"engine": cp.Member(desired, ready, ready if on is None else on)}


@pytest.mark.parametrize(
    ("capacity", "desired", "want"),
    [("25%", 4, 1), ("25%", 3, 1), ("50%", 2, 1), ("100%", 4, 4), (2, 4, 2), (9, 4, 4), ("2", 4, 0)],
)
def test_capacity_rounds_percentages_up_and_caps_counts(capacity: Any, desired: int, want: int) -> None:
    assert cp.capacity_count(capacity, desired) == want


def test_ready_timeout_precedence_annotation_group_default() -> None:
    ann = {cp.READY_TIMEOUT_ANNOTATION: "30m"}
    assert cp.ready_timeout(ann, {"readyTimeout": "20m"}, 900.0) == 1800.0
    assert cp.ready_timeout({cp.READY_TIMEOUT_ANNOTATION: "0s"}, {"readyTimeout": "20m"}, 900.0) == 1200.0
    assert cp.ready_timeout({}, {}, cp.DEFAULT_READY_TIMEOUT) == 900.0
    assert cp.ready_timeout({}, {}, None) is None


def test_first_revision_needs_no_canary() -> None:
    plan = cp.plan(cp.Inputs(MANUAL, engine(0), NEW, "", None, None, {}, T0, None))
    assert plan.phase == cp.STABLE and plan.new_counts == {"engine": 4}


def test_manual_gate_waits_in_pending_then_paused_then_promote_advances() -> None:
    inp = inputs(MANUAL)
    first = cp.plan(inp)
    assert first.phase == cp.PENDING
    assert first.new_counts == {"engine": 1}
    assert first.status["canaryRevisionHash"] == NEW and first.status["stableRevisionHash"] == OLD
    assert first.status["observedTrafficWeight"] == 0

    ready = cp.plan(advance(inp, first, members=engine(1), now=T0 + timedelta(seconds=30)))
    assert ready.phase == cp.PAUSED
    assert ready.status["observedTrafficWeight"] == 10
    assert ready.traffic == [
        {"revisionHash": NEW, "percent": 10, "tag": "canary", "latestRevision": True},
        {"revisionHash": OLD, "percent": 90, "tag": "stable"},
    ]
    # Paused stays paused: nothing advances without the promote.
    again = cp.plan(advance(inp, ready, members=engine(1), now=T0 + timedelta(hours=3)))
    assert again.phase == cp.PAUSED and again.status["currentStep"] == 0

    wrong = cp.plan(advance(inp, ready, members=engine(1), annotations={cp.PROMOTE_ANNOTATION: "cccccccc"}))
    assert wrong.phase == cp.PAUSED and not wrong.consume

    promoted = cp.plan(advance(inp, ready, members=engine(1), annotations={cp.PROMOTE_ANNOTATION: NEW}))
    assert promoted.status["currentStep"] == 1
    assert promoted.phase == cp.PENDING and promoted.new_counts == {"engine": 4}
    assert cp.PROMOTE_ANNOTATION in promoted.consume
    assert promoted.step_advances == 1
    assert ("Normal", cp.STEP_ADVANCED, "canary advanced to step 1 of 2") in promoted.events

    done = cp.plan(advance(inp, promoted, members=engine(4)))
    assert done.phase == cp.STABLE and done.completed
    assert done.status["currentStep"] == 2
    still = cp.plan(advance(inp, done, members=engine(4)))
    assert still.phase == cp.STABLE and not still.completed


def test_timed_gate_advances_after_the_duration_from_ready() -> None:
    canary = steps({"capacity": "25%", "traffic": 10, "pause": {"duration": "10m"}}, {"capacity": "100%", "traffic": 100})
    inp = inputs(canary)
    first = cp.plan(inp)
    ready = cp.plan(advance(inp, first, members=engine(1), now=T0 + timedelta(minutes=5)))
    assert ready.phase == cp.PAUSED and ready.wake_after == 600
    early = cp.plan(advance(inp, ready, members=engine(1), now=T0 + timedelta(minutes=14)))
    assert early.phase == cp.PAUSED
    late = cp.plan(advance(inp, ready, members=engine(1), now=T0 + timedelta(minutes=15)))
    assert late.status["currentStep"] == 1 and late.phase == cp.PENDING


def test_immediate_last_step_waits_out_scale_down_delay_in_promoting() -> None:
    canary = {**steps({"capacity": "100%", "traffic": 100}), "scaleDownDelaySeconds": 60}
    inp = inputs(canary)
    first = cp.plan(inp)
    ready = cp.plan(advance(inp, first, members=engine(4)))
    assert ready.phase == cp.PROMOTING and ready.wake_after == 60
    done = cp.plan(advance(inp, ready, members=engine(4), now=T0 + timedelta(seconds=61)))
    assert done.phase == cp.STABLE and done.completed


def test_lost_instances_return_to_pending_and_restart_the_clock() -> None:
    canary = steps({"capacity": "50%", "traffic": 50, "pause": {"duration": "10m"}}, {"capacity": "100%", "traffic": 100})
    inp = inputs(canary)
    ready = cp.plan(advance(inp, cp.plan(inp), members=engine(2)))
    lost = cp.plan(advance(inp, ready, members=engine(1), now=T0 + timedelta(minutes=8)))
    assert lost.phase == cp.PENDING
    back = cp.plan(advance(inp, lost, members=engine(2), now=T0 + timedelta(minutes=9)))
    assert back.phase == cp.PAUSED
    assert cp.plan(advance(inp, back, members=engine(2), now=T0 + timedelta(minutes=18))).phase == cp.PAUSED
    assert cp.plan(advance(inp, back, members=engine(2), now=T0 + timedelta(minutes=19))).status["currentStep"] == 1


def test_ready_timeout_fails_the_canary_and_promote_does_not_move_it() -> None:
    inp = inputs(MANUAL, timeout=600)
    first = cp.plan(inp)
    assert first.wake_after == 600
    failed = cp.plan(advance(inp, first, now=T0 + timedelta(minutes=10, seconds=1)))
    assert failed.phase == cp.FAILED
    assert failed.events[-1][1] == cp.FAILED_EVENT
    kept = cp.plan(advance(inp, failed, members=engine(1), annotations={cp.PROMOTE_ANNOTATION: NEW}))
    assert kept.phase == cp.FAILED and kept.status["currentStep"] == 0
    # A newer revision leaves a failed canary Failed (documented known bug).
    newer = cp.plan(advance(inp, failed, target_hash="cccccccc"))
    assert newer.phase == cp.FAILED and newer.status["canaryRevisionHash"] == NEW


def test_manual_rollback_holds_the_revision_until_a_third_one() -> None:
    inp = inputs(MANUAL)
    ready = cp.plan(advance(inp, cp.plan(inp), members=engine(1)))
    back = cp.plan(advance(inp, ready, members=engine(1), annotations={cp.ROLLBACK_ANNOTATION: "true"}))
    assert back.phase == cp.ROLLING_BACK and back.rollback_cause == "manual"
    assert back.status["rolledBackRevisionHash"] == NEW and back.status["observedTrafficWeight"] == 0
    assert back.target_hash == OLD and back.new_counts == {"engine": 0}
    assert back.traffic == [{"revisionHash": OLD, "percent": 100, "tag": "stable"}]
    assert cp.ROLLBACK_ANNOTATION not in back.consume  # the spent request stays
    gone = cp.plan(advance(inp, back, members=engine(0), annotations={cp.ROLLBACK_ANNOTATION: "true"}))
    assert gone.phase == cp.ROLLED_BACK and gone.rollback_cause is None
    held = cp.plan(advance(inp, gone, members=engine(0), now=T0 + timedelta(days=1)))
    assert held.phase == cp.ROLLED_BACK and held.target_hash == OLD
    fresh = cp.plan(advance(inp, gone, target_hash="cccccccc", annotations={cp.ROLLBACK_ANNOTATION: "true"}))
    assert fresh.phase == cp.PENDING and fresh.status["canaryRevisionHash"] == "cccccccc"
    assert fresh.status["stableRevisionHash"] == OLD and "rolledBackRevisionHash" not in fresh.status
    assert cp.ROLLBACK_ANNOTATION in fresh.consume


def test_rollback_with_no_canary_in_flight_is_removed_with_a_warning() -> None:
    plan = cp.plan(cp.Inputs(MANUAL, engine(4), OLD, OLD, None, None, {cp.ROLLBACK_ANNOTATION: "true"}, T0, None))
    assert cp.ROLLBACK_ANNOTATION in plan.consume
    assert plan.events == [
        (
            "Warning",
            cp.ROLLBACK_IGNORED,
            "rollback requested for engine with no canary in flight; the request is removed",
        )
    ]


def test_newer_revision_mid_canary_restarts_at_step_zero_keeping_the_stable_revision() -> None:
    inp = inputs(MANUAL)
    ready = cp.plan(advance(inp, cp.plan(inp), members=engine(1)))
    newer = cp.plan(advance(inp, ready, target_hash="cccccccc", stable_hash=NEW, members=engine(0)))
    assert newer.status["currentStep"] == 0 and newer.status["canaryRevisionHash"] == "cccccccc"
    assert newer.status["stableRevisionHash"] == OLD


def test_completed_canary_becomes_the_stable_revision_of_the_next() -> None:
    inp = inputs(steps({"capacity": "100%", "traffic": 100}))
    done = cp.plan(advance(inp, cp.plan(inp), members=engine(4)))
    assert done.phase == cp.STABLE
    nxt = cp.plan(advance(inp, done, target_hash="cccccccc", members=engine(0)))
    assert nxt.status["stableRevisionHash"] == NEW


def test_pre_step_hold_needs_the_promote_annotation_then_the_gate_applies() -> None:
    canary = steps({"capacity": "50%", "traffic": 50, "pause": {"duration": "1m"}}, {"capacity": "100%", "traffic": 100})
    prev = {"canaryRevisionHash": NEW, "stableRevisionHash": OLD, "currentStep": 0, "observedTrafficWeight": 10,
            "preStepHold": True, "stepEnteredTime": "2026-12-03T11:00:00Z"}
    inp = cp.Inputs(canary, engine(1), NEW, OLD, prev, cp.PAUSED, {}, T0, None)
    pending = cp.plan(inp)
    assert pending.phase == cp.PENDING and pending.new_counts == {"engine": 2}
    held = cp.plan(advance(inp, pending, members=engine(2)))
    assert held.phase == cp.PAUSED and held.status["observedTrafficWeight"] == 10
    released = cp.plan(advance(inp, held, members=engine(2), annotations={cp.PROMOTE_ANNOTATION: NEW}))
    assert "preStepHold" not in released.status and released.status["observedTrafficWeight"] == 50
    assert released.status["currentStep"] == 0 and released.phase == cp.PAUSED  # the timed gate applies now


def _sample(at: datetime, value: float | None, *, threshold: str = "0.01") -> analysis.Sample:
    metric = {"name": "error-rate", "operator": "LT", "threshold": threshold}
    answer = analysis.QueryAnswer(values=() if value is None else (value,))
    return analysis.Sample(at, (analysis.judge_metric(metric, answer),))


ANALYSIS = steps(
    {
        "capacity": "25%",
        "traffic": 10,
        "analysis": {
            "interval": "1m",
            "failureLimit": 2,
            "metrics": [{"name": "error-rate", "query": "q", "operator": "LT", "threshold": "0.01"}],
        },
    },
    {"capacity": "100%", "traffic": 100},
)


def test_analysis_failures_reach_the_limit_and_roll_back() -> None:
    inp = inputs(ANALYSIS)
    ready = cp.plan(advance(inp, cp.plan(inp), members=engine(1)))
    assert ready.phase == cp.PAUSED
    assert cp.sample_due(advance(inp, ready, members=engine(1)))
    t1 = T0 + timedelta(minutes=1)
    one = cp.plan(advance(inp, ready, members=engine(1), now=t1, sample=_sample(t1, 0.5)))
    assert one.phase == cp.PAUSED and one.status["analysisFailedChecks"] == 1 and one.evaluated == "fail"
    assert not cp.sample_due(advance(inp, one, members=engine(1), now=t1 + timedelta(seconds=30)))
    t2 = t1 + timedelta(minutes=1)
    two = cp.plan(advance(inp, one, members=engine(1), now=t2, sample=_sample(t2, 0.5)))
    assert two.phase == cp.ROLLING_BACK and two.rollback_cause == "analysis"
    assert two.status["rolledBackRevisionHash"] == NEW and two.new_counts == {"engine": 0}
    assert two.status["metricResults"][0]["value"] == "0.5"


def test_analysis_pass_advances_and_override_passes_the_gate() -> None:
    inp = inputs(ANALYSIS)
    ready = cp.plan(advance(inp, cp.plan(inp), members=engine(1)))
    passed = cp.plan(advance(inp, ready, members=engine(1), sample=_sample(T0, 0.001)))
    assert passed.status["currentStep"] == 1 and passed.evaluated == "pass"
    override = cp.plan(advance(inp, ready, members=engine(1), annotations={cp.PROMOTE_ANNOTATION: NEW}))
    assert override.status["currentStep"] == 1


def test_inconclusive_hold_stalls_into_failed_and_rollback_on_stall_rolls_back() -> None:
    for on_inconclusive, want in (("Hold", cp.FAILED), ("RollbackOnStall", cp.ROLLING_BACK)):
        canary = steps({**ANALYSIS["steps"][0], "analysis": {**ANALYSIS["steps"][0]["analysis"],
                                                              "onInconclusive": on_inconclusive}},
                       ANALYSIS["steps"][1])
        inp = inputs(canary, timeout=300)
        ready = cp.plan(advance(inp, cp.plan(inp), members=engine(1)))
        t = T0 + timedelta(minutes=1)
        held = cp.plan(advance(inp, ready, members=engine(1), now=t, sample=_sample(t, None)))
        assert held.phase == cp.PAUSED and held.evaluated == "inconclusive"
        assert held.status["metricResults"][0]["message"] == "no data"
        late = T0 + timedelta(minutes=6)
        stalled = cp.plan(advance(inp, held, members=engine(1), now=late, sample=_sample(late, None)))
        assert stalled.phase == want


def test_inconclusive_rollback_rolls_back_at_once() -> None:
    canary = steps({**ANALYSIS["steps"][0], "analysis": {**ANALYSIS["steps"][0]["analysis"],
                                                          "onInconclusive": "Rollback"}}, ANALYSIS["steps"][1])
    inp = inputs(canary)
    ready = cp.plan(advance(inp, cp.plan(inp), members=engine(1)))
    assert cp.plan(advance(inp, ready, members=engine(1), sample=_sample(T0, None))).phase == cp.ROLLING_BACK


def test_pass_during_bake_holds_until_a_pass_after_it() -> None:
    first = {**ANALYSIS["steps"][0], "pause": {"duration": "10m"}}
    inp = inputs(steps(first, ANALYSIS["steps"][1]))
    ready = cp.plan(advance(inp, cp.plan(inp), members=engine(1)))
    t = T0 + timedelta(minutes=2)
    early = cp.plan(advance(inp, ready, members=engine(1), now=t, sample=_sample(t, 0.0)))
    assert early.status["currentStep"] == 0
    t = T0 + timedelta(minutes=11)
    late = cp.plan(advance(inp, early, members=engine(1), now=t, sample=_sample(t, 0.0)))
    assert late.status["currentStep"] == 1


def test_primary_is_router_then_engine() -> None:
    assert cp.primary(["decoder", "engine"]) == "engine"
    assert cp.primary(["engine", "router"]) == "router"
