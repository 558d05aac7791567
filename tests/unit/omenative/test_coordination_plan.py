"""Rollout coordination planning (pure): groups, progressions, gates and their documented texts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ome.omenative import coordination_pairing as pairing
from ome.omenative import coordination_plan as cplan
from ome.omenative import coordination_status as cstatus
from ome.omenative.coordination_types import GroupContext, GroupDecision, Limit, Member, member_of

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def isvc(groups: list[dict[str, Any]], **rollout: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "pd", "namespace": "demo", "generation": 3, "annotations": {}},
        "spec": {"engine": {}, "decoder": {}, "router": {}, "rollout": {"groups": groups, **rollout}},
    }


def member(component: str, desired: int, *, new: int = 0, ready: int | None = None, moving: int = 0,
           serving_new: int | None = None, **kw: Any) -> Member:
    """`new` Instances on the new revision (moving ones included), the rest old."""
    ready = new - moving if ready is None else ready
    current = "new" if new == desired and not moving else "old"  # the replica records a finished rollout
    return Member(component, desired, "new", current, on_target=new, ready_target=ready,
                  serving_target=ready if serving_new is None else serving_new, moving=moving,
                  old=desired - new, serving_old=desired - new + moving, **kw)


def plan(spec: dict[str, Any], *members: Member, now: datetime = NOW, tolerance: int = 5) -> cplan.CoordinationPlan:
    return cplan.plan(spec, {m.component: m for m in members}, now, tolerance)


# -- groups -----------------------------------------------------------------------------------------


def test_kinds_and_sequences() -> None:
    assert cplan.kind_of({"components": ["engine"]}) == "blueGreen"
    assert cplan.kind_of({"rollingUpdate": {}}) == "rollingUpdate"
    assert cplan.kind_of({"policyRef": {"name": "p", "progression": "canary"}}) == "canary"
    assert cplan.is_sequence([{"components": ["decoder"]}, {"components": ["engine"], "blueGreen": {}}])
    assert not cplan.is_sequence([{"components": ["decoder"]}])
    assert not cplan.is_sequence([{"components": ["decoder"]}, {"components": ["engine"], "rollingUpdate": {}}])
    declared = cplan.declared_groups(isvc([{"components": ["decoder"], "soak": "10m"},
                                           {"components": ["engine"], "soak": "1m"},
                                           {"components": ["router"], "soak": "30m"}]))
    # The longest soak of any group but the last.
    assert [(d.kind, d.order, d.soak) for d in declared] == [("sequential", ("decoder", "engine", "router"), 600.0)]


def test_a_component_in_no_group_is_not_limited() -> None:
    out = plan(isvc([{"components": ["engine", "decoder"]}]), member("engine", 2), member("decoder", 2),
               member("router", 1))
    assert "router" not in out.limits and set(out.limits) == {"engine", "decoder"}


# -- blue-green -------------------------------------------------------------------------------------


def test_blue_green_moves_a_quarter_rounded_up_and_starts_together() -> None:
    spec = isvc([{"components": ["engine", "decoder"]}])
    out = plan(spec, member("engine", 8, new=0), member("decoder", 3, new=0))
    assert out.limits["engine"].moving == 2 and out.limits["engine"].total == 2  # 25% of 8
    assert out.limits["decoder"].moving == 1  # 25% of 3 rounded up
    assert out.groups[0][1].phase == "Surging"
    # The engine finished its first batch, the decoder none: the engine waits for the decoder.
    out = plan(spec, member("engine", 8, new=2), member("decoder", 3, new=1, ready=0, moving=1))
    assert out.limits["engine"].total == 2 and out.limits["engine"].gate == "Budget"
    assert "waits for decoder" in out.limits["engine"].reason
    assert out.groups[0][1].phase == "Waiting"


def test_blue_green_phases() -> None:
    spec = isvc([{"components": ["engine", "decoder"]}])
    assert plan(spec, member("engine", 2, new=2), member("decoder", 2, new=2)).groups[0][1].phase == "Idle"
    assert plan(spec, member("engine", 2, new=1), member("decoder", 2, new=1)).groups[0][1].phase == "Shifting"
    failed = member("engine", 2, new=1, failed=True)
    decision = plan(spec, failed, member("decoder", 2)).groups[0][1]
    assert decision.phase == "Failed" and decision.message == "one or more Components in the BlueGreen group failed"


def test_pairing_keeps_an_old_decoder_while_engines_are_old_and_an_old_engine_until_a_new_decoder() -> None:
    spec = isvc([{"components": ["engine", "decoder"]}])
    out = plan(spec, member("engine", 2), member("decoder", 2))
    assert out.limits["decoder"].total == 1 and out.limits["engine"].total == 1
    # A decoder serves the new revision: the engine may finish; the decoder still keeps one old.
    out = plan(spec, member("engine", 2, new=1), member("decoder", 2, new=1))
    assert out.limits["engine"].total == 2
    assert out.limits["decoder"].total == 1 and out.limits["decoder"].gate == "Pairing"
    assert out.limits["decoder"].reason == (
        "decoder keeps an Instance on its old revision while 1 engine Instances are on an old revision")
    # Every engine on the new revision: the decoder's last one may go.
    out = plan(spec, member("engine", 2, new=2), member("decoder", 2, new=1))
    assert out.limits["decoder"].total == 2


def test_pairing_with_one_decoder_never_waits_on_itself() -> None:
    spec = isvc([{"components": ["engine", "decoder"]}])
    out = plan(spec, member("engine", 4), member("decoder", 1))
    assert out.limits["decoder"].total == 1  # nothing to keep back with a single decoder
    # Three engines on the new revision, the decoder not serving it yet: the last engine waits for it.
    members = {"engine": member("engine", 4, new=3), "decoder": member("decoder", 1, new=1, ready=0, moving=1)}
    ctx = GroupContext(0, "0", "blueGreen", {}, ("engine", "decoder"), members, spec, NOW)
    decision = GroupDecision()
    pairing.apply(ctx, decision)
    out = cplan.CoordinationPlan(limits=decision.limits)
    assert out.limits["engine"].gate == "Pairing" and out.limits["engine"].total == 3
    assert out.limits["engine"].reason == (
        "engine keeps an Instance on its old revision until a decoder Instance serves the new revision "
        "(0 of 1 do)")


def test_pairing_does_not_deadlock_batches_of_a_larger_engine() -> None:
    """4 engines, 2 decoders: the decoder kept back counts as finished for the start-together share."""
    spec = isvc([{"components": ["engine", "decoder"]}])
    out = plan(spec, member("engine", 4, new=3), member("decoder", 2, new=1))
    assert out.limits["engine"].total == 4


# -- rolling update and maintainRatio --------------------------------------------------------------------


def rolling(tolerance: int | None = 25, **budget: Any) -> dict[str, Any]:
    group: dict[str, Any] = {"components": ["engine", "decoder"], "rollingUpdate": budget or {"maxSurge": 1}}
    if tolerance is not None:
        group["maintainRatio"] = {"tolerance": tolerance}
    return isvc([group])


def test_rolling_update_budget_per_component_and_strategy() -> None:
    out = plan(rolling(None, maxSurge=2, maxUnavailable="50%"), member("engine", 4),
               member("decoder", 4, strategy="RecreatePod"))
    assert out.limits["engine"].moving == 2 and out.limits["decoder"].moving == 2
    assert out.limits["engine"].moving_gate == "Budget"
    assert out.limits["engine"].moving_reason == "per-Component surge budget 2 exhausted (would become 1)"
    assert out.limits["decoder"].moving_reason == "per-Component unavailability budget 2 exhausted (would become 1)"
    default = plan(isvc([{"components": ["engine"], "rollingUpdate": {}}]), member("engine", 8))
    assert default.limits["engine"].moving == 2  # 25% by default


def test_maintain_ratio_holds_the_component_ahead() -> None:
    spec = rolling(25)
    # 4:2, engine at 1/4, decoder at 0/2: the decoder's first start puts it 50% through, only 25% ahead.
    out = plan(spec, member("engine", 4, new=1, moving=1), member("decoder", 2))
    assert out.limits["decoder"].total == 1
    assert out.limits["engine"].total == 1 and out.limits["engine"].gate == "Ratio"
    assert out.limits["engine"].reason == (
        "engine is 25% through its rollout; another Instance would put it more than 25% ahead of decoder (0%)")
    # engine 3/4, decoder 1/2: the engine waits for the decoder, which goes; no pairing gate here.
    out = plan(spec, member("engine", 4, new=3), member("decoder", 2, new=1))
    assert out.limits["engine"].total == 3 and out.limits["decoder"].total == 2
    assert "decoder" not in {c for c, lim in out.limits.items() if lim.gate == "Pairing"}


def test_maintain_ratio_default_tolerance_never_deadlocks() -> None:
    """Tolerance 5 with 4:2: the member whose next start leaves it least far through still goes."""
    spec = rolling(None, maxSurge=1)
    spec["spec"]["rollout"]["groups"][0]["maintainRatio"] = {}
    engine, decoder = 0, 0
    for _ in range(20):
        out = plan(spec, member("engine", 4, new=engine), member("decoder", 2, new=decoder), tolerance=5)
        e, d = out.limits["engine"], out.limits["decoder"]
        moved = False
        if engine < 4 and (e.total is None or e.total > engine):
            engine += 1
            moved = True
        elif decoder < 2 and (d.total is None or d.total > decoder):
            decoder += 1
            moved = True
        assert moved, (engine, decoder, e, d)
        if engine == 4 and decoder == 2:
            break
    assert (engine, decoder) == (4, 2)


def test_in_place_strategies_skip_the_ratio_check() -> None:
    out = plan(rolling(0), member("engine", 4, new=3, strategy="InPlaceOnly"), member("decoder", 2))
    assert out.limits["engine"].gate != "Ratio" or out.limits["engine"].total is None or \
        out.limits["engine"].total == 4 or out.limits["engine"].gate == "Pairing"


def test_drain_first_ratio_band() -> None:
    assert cplan._within({"e": member("e", 4), "d": member("d", 2)}, {"e": 4, "d": 2}, 0.25)
    assert not cplan._within({"e": member("e", 4), "d": member("d", 2)}, {"e": 4, "d": 1}, 0.25)


# -- sequence -----------------------------------------------------------------------------------------------


SEQUENCE = [{"components": ["decoder"], "soak": "10m"}, {"components": ["engine"]}]


def test_sequence_waits_on_the_rolling_component() -> None:
    out = plan(isvc(SEQUENCE), member("decoder", 1, new=1, ready=0, moving=1), member("engine", 2))
    assert out.limits["engine"] == Limit(total=0, gate="Sequential", reason="Sequential waiting on decoder")
    decision = out.groups[0][1]
    assert decision.current_component == "decoder" and decision.composite_phase == "decoder.Waiting"


def test_sequence_soak_after_the_previous_component() -> None:
    done = NOW - timedelta(minutes=3)
    out = plan(isvc(SEQUENCE), member("decoder", 1, new=1, ready_since=done), member("engine", 2))
    limit = out.limits["engine"]
    assert limit.gate == "Sequential"
    assert limit.reason == "Sequential.Soak: engine waiting out the 10m0s soak after decoder"
    assert out.wake_after == pytest.approx(7 * 60)
    assert out.groups[0][1].previous_component == "decoder"
    # Soak over: the engine goes, a quarter at a time.
    out = plan(isvc(SEQUENCE), member("decoder", 1, new=1, ready_since=NOW - timedelta(minutes=11)),
               member("engine", 2))
    assert out.limits["engine"].total is None and out.limits["engine"].moving == 1


def test_sequence_blocked_by_a_failed_component() -> None:
    out = plan(isvc(SEQUENCE), member("decoder", 1, new=1, ready=0, failed=True), member("engine", 2))
    decision = out.groups[0][1]
    assert decision.phase == "Failed" and decision.composite_phase == "Sequential.Failed"
    assert decision.message == "Sequential group blocked by Failed Component: decoder"
    assert out.limits["engine"].reason == "Sequential waiting on decoder"


# -- plan gate, pause, the hook ---------------------------------------------------------------------------------


def test_an_unsynced_member_holds_the_whole_group_on_the_plan_gate() -> None:
    out = plan(isvc([{"components": ["engine", "decoder"]}]), member("engine", 2),
               Member("decoder", 2, "old", "old", on_target=2, synced=False))
    assert {c: (lim.gate, lim.total) for c, lim in out.limits.items()} == {"engine": ("Plan", 0), "decoder": ("Plan", 2)}
    assert out.limits["engine"].reason == "rollout group 0 waiting for decoder to observe InferenceService generation 3"


def test_pause_reports_paused() -> None:
    spec = isvc([{"components": ["engine", "decoder"]}])
    spec["metadata"]["annotations"]["ome.io/rollout-paused"] = "true"
    decision = plan(spec, member("engine", 2), member("decoder", 2)).groups[0][1]
    assert decision.phase == "Paused"


def test_a_registered_progression_plugs_in(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[GroupContext] = []

    def canary(ctx: GroupContext) -> GroupDecision:
        seen.append(ctx)
        return GroupDecision(limits={c: Limit(total=1, gate="Budget", reason="step") for c in ctx.members},
                             phase="Surging")

    monkeypatch.setitem(cplan.PROGRESSIONS, "canary", canary)
    out = plan(isvc([{"components": ["engine", "decoder"], "canary": {"steps": []}}]), member("engine", 4),
               member("decoder", 2))
    assert seen[0].kind == "canary" and out.limits["engine"].total == 1
    # A canary group is the canary's to report.
    assert cstatus.groups_status(out, None, NOW) == []


def test_without_a_progression_the_group_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(cplan.PROGRESSIONS, "canary", raising=False)
    out = plan(isvc([{"components": ["engine"], "canary": {"steps": []}}]), member("engine", 4))
    assert out.limits == {} and out.groups == []


# -- observing a replica --------------------------------------------------------------------------------------------


def replica_obj(rows: list[dict[str, Any]], **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"generation": 2, "annotations": {"ome.io/parent-generation": "3"}},
        "spec": {"replicas": len(rows)},
        "status": {"observedGeneration": 2, "updateRevision": "pd-engine-new", "currentRevision": "pd-engine-old",
                   "instanceStatuses": rows, **status},
    }


def test_member_of_counts_rows() -> None:
    rows = [
        {"index": 0, "phase": "Ready", "runningRevision": "pd-engine-new", "servingPodCount": 1},
        {"index": 1, "phase": "Updating", "runningRevision": "pd-engine-old", "targetRevision": "pd-engine-new",
         "servingPodCount": 1},
        {"index": 2, "phase": "Ready", "runningRevision": "pd-engine-old", "servingPodCount": 1},
    ]
    m = member_of("engine", replica_obj(rows), 3, "SurgeThenDrain")
    assert (m.on_target, m.ready_target, m.serving_target, m.moving, m.old, m.serving_old) == (2, 1, 1, 1, 1, 2)
    assert m.synced and m.rolling and m.target == "new" and m.current == "old"
    assert not member_of("engine", replica_obj(rows), 4, "SurgeThenDrain").synced  # older projection
    assert not member_of("engine", None, 3, "SurgeThenDrain").synced


def test_sequence_waits_until_the_previous_replica_records_its_rollout() -> None:
    """Every decoder Instance on the new revision, but its replica still reports the old current revision
    (its Ready condition has not turned True yet): the engine still waits, so the soak counts from then."""
    finishing = Member("decoder", 1, "new", "old", on_target=1, ready_target=1, serving_target=1)
    out = plan(isvc(SEQUENCE), finishing, member("engine", 2))
    assert out.limits["engine"].reason == "Sequential waiting on decoder"


def test_members_held_at_their_partition_stage_the_group() -> None:
    """kubectl-ome/rollout.md: Staged means a group finished rolling out up to the rollingUpdate.partition its
    components set; the status counts it as settled (RolloutCoordinationReady True, reason Staged)."""
    spec = isvc([{"components": ["engine", "decoder"]}])
    staged = plan(spec, member("engine", 4, new=3, partition=1), member("decoder", 2, new=1, partition=1))
    decision = staged.groups[0][1]
    assert decision.phase == "Staged" and "partition" in decision.message
    entries = cstatus.groups_status(staged, None, NOW)
    assert cstatus.ready_condition(entries) == ("True", "Staged", "")
    # Not yet at the partition, a held Instance still moving or a new one not Ready: still rolling.
    assert plan(spec, member("engine", 4, new=2, partition=1),
                member("decoder", 2, new=1, partition=1)).groups[0][1].phase == "Shifting"
    assert plan(spec, member("engine", 4, new=3, moving=1, partition=1),
                member("decoder", 2, new=1, partition=1)).groups[0][1].phase == "Shifting"
    assert plan(spec, member("engine", 4, new=3, ready=2, partition=1),
                member("decoder", 2, new=1, partition=1)).groups[0][1].phase == "Waiting"
    # One member staged, the other still rolling: the group shows the other's phase.
    assert plan(spec, member("engine", 4, new=3, partition=1),
                member("decoder", 2, new=0)).groups[0][1].phase == "Surging"
    # Without a partition the same counts are a rollout in flight.
    assert plan(spec, member("engine", 4, new=3), member("decoder", 2, new=1)).groups[0][1].phase == "Shifting"
    # The rolling-update progression reports it too.
    rolled = isvc([{"components": ["engine", "decoder"], "rollingUpdate": {"maxSurge": 1}}])
    assert plan(rolled, member("engine", 4, new=2, partition=2),
                member("decoder", 2, new=1, partition=1)).groups[0][1].phase == "Staged"


def test_member_of_carries_the_partition() -> None:
    replica = {"metadata": {"name": "pd-engine", "generation": 1, "annotations": {}},
               "spec": {"replicas": 2}, "status": {"observedGeneration": 1}}
    assert member_of("engine", replica, None, "SurgeThenDrain", None, 1).partition == 1
