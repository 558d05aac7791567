"""The canary progression for the coordination hook (pure): per member, how many Instances may run the new
revision, read from the canary status the canary controller last wrote.

The step machine itself (`canary_plan`) runs only in the canary controller, which records each move in
`status.components.<primary>.canary`; this function never advances anything, so the Instance rollout
and the coordination controller may call it as often as they like:

    no canary for the member's new revision yet   hold at what is on it now (gate `Plan`)
    a step in progress (or Failed)                the step's capacity of the member's desired replicas
                                                  (gate `Budget`)
    RollingBack / RolledBack (revision held)      no cap: the Instance rollout moves Instances back to
                                                  the stable revision (`revert_revision`)
    completed, or no rollout in flight            no cap
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from ome.omenative import canary_plan
from ome.omenative.coordination_types import (
    GATE_BUDGET,
    GATE_PLAN,
    GroupContext,
    GroupDecision,
    Limit,
    Member,
)

WAITING: Final = "waiting for the canary controller to start a canary toward"


def canary_of(isvc: Mapping[str, Any], components: Sequence[str]) -> tuple[str, dict[str, Any], str | None]:
    """(primary component, its canary status, its rolloutPhase)."""
    primary = canary_plan.primary(list(components))
    entry = (((isvc.get("status") or {}).get("components") or {}).get(primary)) or {}
    return primary, dict(entry.get("canary") or {}), entry.get("rolloutPhase")


def steps_of(isvc: Mapping[str, Any], group: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The pinned plan's steps for this group when a run is active, else the spec's."""
    run = ((isvc.get("status") or {}).get("rollout") or {}).get("activeRun") or {}
    members = set(group.get("components") or [])
    for entry in (run.get("plan") or {}).get("groups") or []:
        pinned = entry.get("group") or {}
        if set(pinned.get("components") or []) == members and pinned.get("canary") is not None:
            return list(pinned["canary"].get("steps") or [])
    return list((group.get("canary") or {}).get("steps") or [])


def held(canary: Mapping[str, Any], primary_target: str) -> bool:
    """The spec still asks for the revision a rollback rejected."""
    rejected = canary.get("rolledBackRevisionHash")
    return bool(rejected) and rejected == primary_target


def progression(ctx: GroupContext) -> GroupDecision:
    primary, canary, phase = canary_of(ctx.isvc, ctx.order)
    decision = GroupDecision(phase=phase or "Idle", message=f"canary {phase or 'idle'}")
    lead = ctx.members.get(primary)
    if lead is None or not lead.target:
        return decision
    if held(canary, lead.target):
        return decision  # moving back: no cap on the stable revision
    steps = steps_of(ctx.isvc, ctx.group)
    started = canary.get("canaryRevisionHash") == lead.target
    if not started:
        if lead.current and lead.current != lead.target:
            reason = f"{WAITING} {lead.target}"
            for c, m in ctx.members.items():
                decision.limits[c] = Limit(total=m.on_target, gate=GATE_PLAN, reason=reason)
        return decision
    index = int(canary.get("currentStep") or 0)
    if index >= len(steps) or not steps:
        return decision
    for c, m in ctx.members.items():
        decision.limits[c] = _limit(steps[index], m, index)
    return decision


def _limit(step: Mapping[str, Any], member: Member, index: int) -> Limit:
    count = canary_plan.capacity_count(step.get("capacity"), member.desired)
    reason = f"canary step {index} holds {count} on the new revision"
    return Limit(total=count, gate=GATE_BUDGET, reason=reason)


def parked(isvc: Mapping[str, Any]) -> str | None:
    """The park reason while `RolloutPlanReady` is False (the plan did not resolve), else None."""
    for cond in (isvc.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "RolloutPlanReady" and cond.get("status") == "False":
            return str(cond.get("reason") or "PlanInvalid")
    return None


def park_hold(ctx: GroupContext, decision: GroupDecision, reason: str) -> GroupDecision:
    """A parked rollout starts nothing in any group: the previous revision keeps serving."""
    message = f"rollout parked ({reason}): the new revision is held, the previous revision keeps serving"
    for c, m in ctx.members.items():
        if m.rolling:
            decision.limits[c] = Limit(total=m.on_target, gate=GATE_PLAN, reason=message)
    return decision

