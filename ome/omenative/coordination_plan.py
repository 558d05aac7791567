"""Rollout coordination (pure): how far each grouped component's rollout may go, and each group's phase.

`spec.rollout.groups` put OMENative components in groups. The InferenceService controller writes each
component's InferenceReplica as it always does; the Instance rollout reconciler moves Instances onto the
replica's update revision, but before each start it asks `limit_for` how far the component may go: a
`Limit` on the Instances on (or moving to) the update revision and on those moving at once, with the
`rolloutHold` gate and reason a start past it waits under. The rollout coordination controller
(`ome.controllers.rolloutcoordination`) runs the same `plan` to report `status.rolloutCoordination`,
the `RolloutCoordinationReady` condition, `CoordinationGroupFailed` and the transition metric.

Progression hook: `PROGRESSIONS` maps a progression kind (`blueGreen`, `rollingUpdate`, `sequential`,
`canary`) to a function `GroupContext -> GroupDecision`. It returns, per component of the group, a
`Limit` (`total`: Instances allowed on the new revision; `moving`: at once), plus the group's phase and
message for status and when to look again (`wake`). `register_progression(kind, fn)` plugs a
progression in (the canary planner registers `canary`); a kind with no function leaves its group's
components unlimited and out of the coordination status.

Group phases (one group; a sequence is one group of its single-component groups) and transitions:

    Idle --a member's update revision differs from some of its Instances--> Surging
    Surging --every rolling member has an Instance on its new revision--> Waiting
    Waiting --every new-revision Instance is Ready--> Shifting (old Instances still there)
    Shifting --no old Instance left, some still moving--> ScalingDown
    ScalingDown / Shifting --every Instance on the new revision--> Idle
    Shifting --every rolling member went as far as its rollingUpdate.partition lets it--> Staged
    Staged --the partition lowered, or a newer revision--> the phase its members then show
    any --an Instance of a member Failed--> Failed --the members healthy again--> the phase above
    any --ome.io/rollout-paused on the InferenceService--> Paused --annotation removed--> the phase above

Before any of that, every member must show the InferenceService generation the coordinator reads (its
replica written from it and its status observing that write): until then each member waits under the
`Plan` gate, so no component starts on a plan its peers have not seen yet.

Gates the built-in progressions hold with:

- blue-green: members start together; each moves at most 25% of its Instances (rounded up) at a time,
  and none starts a batch past the others' finished share (`Budget`).
- rolling update: each member within the group's `maxSurge` (SurgeThenDrain) or `maxUnavailable`
  (other strategies), 25% by default (`Budget`); with `maintainRatio`, a member more than `tolerance`
  percent further through its rollout than another, or a drain that would move the serving ratio
  further than that from the starting one, waits (`Ratio`). In-place strategies skip the ratio check.
- sequence: the first rolling member in list order goes; the others wait (`Sequential waiting on X`);
  the one after a finished member waits out the soak (`Sequential.Soak: X waiting out the 10m0s soak
  after Y`).
- pairing (blue-green groups with both engine and decoder): the engine's last old
  Instance waits until a decoder serves the new revision, and the decoder's last old Instance waits
  while any engine Instance is on an old revision (`Pairing`), so an old engine always has an old
  decoder and a new engine a new decoder (`coordination_pairing`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from ome.config.durations import parse_duration
from ome.omenative import canary_progression, rollout_budget
from ome.omenative import coordination_pairing as pairing
from ome.omenative.coordination_types import (
    BLUE_GREEN,
    CANARY,
    FAILED,
    GATE_BUDGET,
    GATE_PLAN,
    GATE_RATIO,
    GATE_SEQUENTIAL,
    IDLE,
    IN_PLACE_STRATEGIES,
    PAUSE_ANNOTATION,
    PAUSED,
    ROLLING_UPDATE,
    SCALING_DOWN,
    SEQUENTIAL,
    SHIFTING,
    STAGED,
    SURGING,
    WAITING,
    GroupContext,
    GroupDecision,
    Limit,
    Member,
)
from ome.omenative.pods_view import go_duration

Progression = Callable[[GroupContext], GroupDecision]
BLUE_GREEN_SHARE: Final = 25
DEFAULT_BUDGET: Final = "25%"


@dataclass(slots=True)
class CoordinationPlan:
    """Every group's context and decision, and the limit per component (None: not coordinated)."""

    groups: list[tuple[GroupContext, GroupDecision]] = field(default_factory=list)
    limits: dict[str, Limit] = field(default_factory=dict)
    wake_after: float | None = None


# -- the groups ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeclaredGroup:
    index: int
    kind: str
    group: Mapping[str, Any]
    order: tuple[str, ...]
    soak: float = 0.0


def kind_of(group: Mapping[str, Any]) -> str:
    """The group's progression: the one it sets, its policyRef's, or blue-green."""
    for kind in (CANARY, ROLLING_UPDATE, BLUE_GREEN):
        if group.get(kind) is not None:
            return kind
    ref = group.get("policyRef") or {}
    return str(ref.get("progression") or BLUE_GREEN)


def is_sequence(groups: Sequence[Mapping[str, Any]]) -> bool:
    """Two or more groups, none a canary, all blue-green with one component: they roll one at a time."""
    others = [g for g in groups if kind_of(g) != CANARY]
    return len(others) >= 2 and all(
        kind_of(g) == BLUE_GREEN and len(g.get("components") or []) == 1 for g in others
    )


def declared_groups(isvc: Mapping[str, Any]) -> list[DeclaredGroup]:
    groups = list(((isvc.get("spec") or {}).get("rollout") or {}).get("groups") or [])
    out: list[DeclaredGroup] = []
    if is_sequence(groups):
        seq = [(i, g) for i, g in enumerate(groups) if kind_of(g) != CANARY]
        soaks = [parse_duration(g.get("soak")) or 0.0 for _, g in seq[:-1]]
        order = tuple(str(g["components"][0]) for _, g in seq)
        out.append(DeclaredGroup(seq[0][0], SEQUENTIAL, seq[0][1], order, max(soaks, default=0.0)))
        out += [DeclaredGroup(i, CANARY, g, tuple(g.get("components") or ())) for i, g in enumerate(groups)
                if kind_of(g) == CANARY]
        return sorted(out, key=lambda d: d.index)
    return [DeclaredGroup(i, kind_of(g), g, tuple(g.get("components") or ())) for i, g in enumerate(groups)]


def grouped_components(isvc: Mapping[str, Any]) -> set[str]:
    return {c for d in declared_groups(isvc) for c in d.order}


def group_name(index: int) -> str:
    return str(index)


# -- the pass ----------------------------------------------------------------------------------------


PROGRESSIONS: dict[str, Progression] = {}


def register_progression(kind: str, fn: Progression) -> None:
    """Plug in the planner of one progression kind (see the module docstring)."""
    PROGRESSIONS[kind] = fn


def plan(
    isvc: Mapping[str, Any], members: Mapping[str, Member], now: datetime, ratio_tolerance: int = 5
) -> CoordinationPlan:
    out = CoordinationPlan()
    annotations = (isvc.get("metadata") or {}).get("annotations") or {}
    paused = annotations.get(PAUSE_ANNOTATION) in ("true", "freeze")
    for declared in declared_groups(isvc):
        fn = PROGRESSIONS.get(declared.kind)
        present = {c: members[c] for c in declared.order if c in members}
        if fn is None or not present:
            continue
        ctx = GroupContext(
            index=declared.index, name=group_name(declared.index), kind=declared.kind, group=declared.group,
            order=tuple(c for c in declared.order if c in present), members=present, isvc=isvc, now=now,
            soak=declared.soak, ratio_tolerance=ratio_tolerance,
        )
        unsynced = [c for c, m in present.items() if not m.synced]
        if unsynced and declared.kind != CANARY:
            decision = plan_hold(ctx, unsynced)
        else:
            decision = fn(ctx)
        if (parked := canary_progression.parked(isvc)) is not None:  # fail closed: no default progression
            decision = canary_progression.park_hold(ctx, decision, parked)
        if paused and declared.kind != CANARY:
            decision.phase, decision.message = PAUSED, "rollout paused via ome.io/rollout-paused annotation"
        out.groups.append((ctx, decision))
        out.limits.update(decision.limits)
        if decision.wake_after is not None:
            out.wake_after = decision.wake_after if out.wake_after is None else min(out.wake_after,
                                                                                    decision.wake_after)
    return out


def plan_hold(ctx: GroupContext, unsynced: Sequence[str]) -> GroupDecision:
    """Some member has not seen this InferenceService generation: nobody starts yet (Plan gate)."""
    generation = (ctx.isvc.get("metadata") or {}).get("generation")
    reason = (f"rollout group {ctx.name} waiting for {', '.join(sorted(unsynced))} to observe "
              f"InferenceService generation {generation}")
    decision = GroupDecision(phase=phase_of(ctx.members.values()), message=reason)
    for c, m in ctx.members.items():
        decision.limits[c] = Limit(total=m.on_target, gate=GATE_PLAN, reason=reason)
    return decision


# -- phases ------------------------------------------------------------------------------------------


def phase_of(members: Sequence[Member] | Any) -> str:
    members = list(members)
    if any(m.failed for m in members):
        return FAILED
    rolling = [m for m in members if m.rolling]
    if not rolling:
        return IDLE
    # A member held at its partition on purpose is finished for now; the group is Staged once all are.
    if all(m.staged for m in rolling):
        return STAGED
    rolling = [m for m in rolling if not m.staged]
    if any(m.on_target == 0 for m in rolling):
        return SURGING
    if any(m.ready_target < m.on_target - m.moving or m.moving > 0 and m.ready_target == 0 for m in rolling):
        return WAITING
    if any(m.old > 0 for m in rolling):
        return SHIFTING
    return SCALING_DOWN


def message_of(phase: str, kind: str) -> str:
    return {
        IDLE: "no rollout in flight",
        SURGING: "creating new-revision pods",
        WAITING: "waiting for new-revision pods to be Ready",
        SHIFTING: "shifting traffic; old-revision pods still serving",
        SCALING_DOWN: "scaling down old-revision pods",
        STAGED: "staged at the partition; held Instances stay on the prior revision",
        FAILED: f"one or more Components in the {kind} group failed",
    }.get(phase, "")


# -- blue-green ----------------------------------------------------------------------------------------


def batch_of(desired: int) -> int:
    return max(math.ceil(desired * BLUE_GREEN_SHARE / 100), 1)


def blue_green(ctx: GroupContext) -> GroupDecision:
    members = ctx.members
    phase = phase_of(members.values())
    decision = GroupDecision(phase=phase, message=message_of(phase, "BlueGreen"))
    rolling = [m for m in members.values() if m.rolling]
    keep = pairing.reserved(members)
    # Finished share of the slowest rolling member: nobody starts a batch beyond it (start together).
    # An Instance pairing keeps back counts as finished, or the two would wait on each other.
    share = {c: min(m.ready_target / max(m.desired - keep.get(c, 0), 1), 1.0) for c, m in members.items()}
    floor = min((share[m.component] for m in rolling), default=1.0)
    for c, m in members.items():
        batch = batch_of(m.desired)
        total = min(m.desired, math.ceil(floor * m.desired - 1e-9) + batch)
        reason = f"blue-green group {ctx.name}: {c} moves at most {batch} of {m.desired} Instances at a time"
        others = [p for p in rolling if p is not m]
        if others:
            behind = min(others, key=lambda p: share[p.component])
            done = f"{behind.ready_target}/{behind.desired}"
            reason += f" and waits for {behind.component} ({done} on its new revision)"
        decision.limits[c] = Limit(total=total, moving=batch, gate=GATE_BUDGET, reason=reason,
                                   moving_gate=GATE_BUDGET, moving_reason=reason)
    pairing.apply(ctx, decision)
    return decision


# -- rolling update --------------------------------------------------------------------------------------


def rolling_update(ctx: GroupContext) -> GroupDecision:
    members = ctx.members
    phase = phase_of(members.values())
    decision = GroupDecision(phase=phase, message=message_of(phase, "RollingUpdate"))
    rolling_spec = ctx.group.get(ROLLING_UPDATE) or {}
    ratio = ctx.group.get("maintainRatio")
    tolerance = ratio.get("tolerance") if isinstance(ratio, Mapping) else None
    if tolerance is None:
        tolerance = ctx.ratio_tolerance
    for c, m in members.items():
        surge = m.strategy == rollout_budget.SURGE
        field_name = "maxSurge" if surge else "maxUnavailable"
        value = rolling_spec.get(field_name, DEFAULT_BUDGET)
        budget = rollout_budget.resolve(value, m.desired)
        budget = budget if budget is not None else m.desired
        word = "surge" if surge else "unavailability"
        reason = f"per-Component {word} budget {budget} exhausted (would become {m.moving + 1})"
        total, why = None, ""
        if ratio is not None and len(members) > 1 and m.strategy not in IN_PLACE_STRATEGIES:
            total, why = ratio_total(ctx, m, int(tolerance))
        decision.limits[c] = Limit(total=total, moving=budget, gate=GATE_RATIO, reason=why,
                                   moving_gate=GATE_BUDGET, moving_reason=reason)
    if ratio is not None and len(members) > 1:
        decision.observed_ratio = {
            "original": {c: m.desired for c, m in members.items()},
            "current": {c: m.on_target + m.old for c, m in members.items()},
            "newPods": {c: m.on_target for c, m in members.items()},
        }
    # No pairing gate here: a rolling update keeps the ratio, not the pairs (admission refuses a pairing
    # protocol change rolled this way: PairingProtocolChangeUncoordinated).
    return decision


def progress(m: Member) -> float:
    """Share of the Instances on (or moving to) the new revision."""
    return min(m.on_target / m.desired, 1.0) if m.desired else 1.0


def _can_move(m: Member, keep: Mapping[str, int]) -> bool:
    """Rolling, with an old Instance that pairing does not keep back."""
    return m.rolling and m.old - keep.get(m.component, 0) > 0


def ratio_total(ctx: GroupContext, m: Member, tolerance: int) -> tuple[int | None, str]:
    """Under maintainRatio: how many of `m`'s Instances may be on the new revision now, and why no more.

    A start may not put `m` more than `tolerance` percent further through its rollout than the least
    advanced peer that can still move. When no member's next start fits, the one whose next start leaves
    it least far through (then by name) still goes, so the group never waits on itself. A drain-first
    strategy also may not move the serving ratio further than `tolerance` from the starting one."""
    band = tolerance / 100
    keep: dict[str, int] = {}
    peers = [p for p in ctx.members.values() if p is not m and _can_move(p, keep)]
    if not m.rolling or not peers:
        return None, ""
    behind = min(peers, key=progress)
    floor = progress(behind)
    fit = math.floor((floor + band) * m.desired + 1e-9) - m.on_target
    reason = (f"{m.component} is {round(progress(m) * 100)}% through its rollout; another Instance would put "
              f"it more than {tolerance}% ahead of {behind.component} ({round(floor * 100)}%)")
    if fit < 1 and _next_mover(ctx, keep) == m.component:
        fit = 1
    total = m.on_target + max(fit, 0)
    if m.strategy != rollout_budget.SURGE and total > m.on_target and (drain := _drain_hold(ctx, m, band)):
        return m.on_target, drain.replace("{tolerance}", str(tolerance))
    return total, reason


def _next_mover(ctx: GroupContext, keep: Mapping[str, int]) -> str | None:
    """The member that can move whose next start leaves it least far through its rollout (then by name)."""
    movers = [p for p in ctx.members.values() if _can_move(p, keep)]
    if not movers:
        return None
    return min(movers, key=lambda p: ((p.on_target + 1) / max(p.desired, 1), p.component)).component


def _drain_hold(ctx: GroupContext, m: Member, band: float) -> str | None:
    """Why draining one more of `m`'s Instances would move the serving ratio too far (None: it may)."""
    serving = {c: p.serving_old + p.serving_target for c, p in ctx.members.items()}
    projected = {**serving, m.component: serving[m.component] - 1}
    if _within(ctx.members, projected, band):
        return None
    if m.moving == 0 and serving[m.component] >= m.desired and _within(ctx.members, serving, band) \
            and projected[m.component] >= 1 and _within(ctx.members, projected, band * 2):
        return None  # one Instance at a time even when the band is narrower than one Instance
    return (f"draining a {m.component} Instance would move the serving ratio more than {{tolerance}}% from "
            + ":".join(str(p.desired) for p in ctx.members.values()))


def _within(members: Mapping[str, Member], serving: Mapping[str, int], band: float) -> bool:
    items = [(c, m.desired) for c, m in members.items() if m.desired > 0]
    for i, (a, da) in enumerate(items):
        for b, db in items[i + 1:]:
            if serving[b] <= 0:
                if serving[a] > 0:
                    return False
                continue
            want, got = da / db, serving[a] / serving[b]
            if abs(got - want) > want * band + 1e-9:
                return False
    return True


# -- sequence ------------------------------------------------------------------------------------------------


def sequential(ctx: GroupContext) -> GroupDecision:
    order = list(ctx.order)
    members = ctx.members
    failed = next((c for c in order if members[c].failed), None)
    active = next((c for c in order if members[c].rolling), None)
    decision = GroupDecision()
    if failed is not None:
        decision.phase, decision.composite_phase = FAILED, "Sequential.Failed"
        decision.message = f"Sequential group blocked by Failed Component: {failed}"
        decision.current_component = failed
    elif active is None:
        decision.phase, decision.message = IDLE, "no rollout in flight"
    else:
        decision.phase = phase_of([members[active]])
        decision.message = message_of(decision.phase, "Sequential")
        decision.composite_phase = f"{active}.{decision.phase}"
        decision.current_component = active
    holder = failed or active
    for c in order:
        m = members[c]
        if holder is not None and c != holder:
            if order.index(c) > order.index(holder) or members[c].rolling:
                reason = f"Sequential waiting on {holder}"
                decision.limits[c] = Limit(total=m.on_target, gate=GATE_SEQUENTIAL, reason=reason)
                continue
        batch = batch_of(m.desired)
        reason = f"sequence {ctx.name}: {c} moves at most {batch} of {m.desired} Instances at a time"
        decision.limits[c] = Limit(moving=batch, gate=GATE_BUDGET, reason=reason)
    if active is not None and failed is None:
        prev = _previous(order, active)
        if prev is not None:
            decision.previous_component = prev
        soak = _soak_left(ctx, active, prev)
        if soak is not None:
            m = members[active]
            reason = f"Sequential.Soak: {active} waiting out the {go_duration(ctx.soak)} soak after {prev}"
            decision.limits[active] = Limit(total=m.on_target, gate=GATE_SEQUENTIAL, reason=reason)
            decision.composite_phase = "Sequential.Soak"
            decision.message = reason
            decision.wake(soak)
    return decision


def _previous(order: Sequence[str], component: str) -> str | None:
    at = order.index(component)
    return order[at - 1] if at > 0 else None


def _soak_left(ctx: GroupContext, active: str, prev: str | None) -> float | None:
    """Seconds of soak still to wait before `active` starts (None: none), counted from when `prev`
    last finished a rollout. Only before `active` has started: a started component finishes."""
    if prev is None or ctx.soak <= 0:
        return None
    m, before = ctx.members[active], ctx.members[prev]
    if m.on_target > 0:
        return None
    if before.rolling or before.ready_since is None:
        return None
    left = ctx.soak - (ctx.now - before.ready_since).total_seconds()
    return left if left > 0 else None


register_progression(BLUE_GREEN, blue_green)
register_progression(ROLLING_UPDATE, rolling_update)
register_progression(SEQUENTIAL, sequential)
register_progression(CANARY, canary_progression.progression)


def limit_for(coordination: CoordinationPlan, component: str) -> Limit | None:
    return coordination.limits.get(component)
