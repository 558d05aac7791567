"""What rollout coordination reports (pure): `status.rolloutCoordination.groups`, the
`RolloutCoordinationReady` condition, and the group transitions behind `CoordinationGroupFailed` and
`ome_omenative_rollout_group_transition_total`.

Only blue-green, rolling-update and sequential groups are reported here; a canary group reports its own
status (`status.components.<c>.canary`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from ome.omenative.coordination_plan import CoordinationPlan
from ome.omenative.coordination_types import (
    CANARY,
    FAILED,
    IDLE,
    POLICY_OF,
    ROLLING_UPDATE,
    STAGED,
    GroupContext,
    GroupDecision,
)
from ome.omenative.pods_view import format_time

Obj = dict[str, Any]

CONDITION: Final = "RolloutCoordinationReady"
GROUP_FAILED_EVENT: Final = "CoordinationGroupFailed"


def coordinated(plan: CoordinationPlan) -> list[tuple[GroupContext, GroupDecision]]:
    return [(ctx, d) for ctx, d in plan.groups if ctx.kind != CANARY and ctx.kind in POLICY_OF]


def group_entry(
    ctx: GroupContext, decision: GroupDecision, previous: Mapping[str, Any] | None, now: datetime
) -> Obj:
    """One group's status; lastTransitionTime moves only when the phase does."""
    entry: Obj = {
        "name": ctx.name,
        "components": list(ctx.order),
        "policy": POLICY_OF[ctx.kind],
        "phase": decision.phase,
    }
    if ctx.kind == "sequential":
        entry["order"] = list(ctx.order)
    if decision.composite_phase:
        entry["compositePhase"] = decision.composite_phase
    if decision.current_component:
        entry["currentComponent"] = decision.current_component
    if decision.previous_component:
        entry["previousComponent"] = decision.previous_component
    if ctx.kind == ROLLING_UPDATE and (ctx.group.get(ROLLING_UPDATE) or {}).get("maxSurge") is not None:
        entry["observedSurge"] = ctx.group[ROLLING_UPDATE]["maxSurge"]
    if decision.observed_ratio:
        entry["observedRatio"] = decision.observed_ratio
    if decision.message:
        entry["message"] = decision.message
    previous = previous or {}
    same = previous.get("phase") == decision.phase and previous.get("lastTransitionTime")
    entry["lastTransitionTime"] = previous["lastTransitionTime"] if same else format_time(now)
    return entry


def groups_status(plan: CoordinationPlan, previous: Mapping[str, Any] | None, now: datetime) -> list[Obj]:
    before = {g.get("name"): g for g in (previous or {}).get("groups") or [] if isinstance(g, Mapping)}
    return [group_entry(ctx, d, before.get(ctx.name), now) for ctx, d in coordinated(plan)]


def ready_condition(groups: Sequence[Mapping[str, Any]]) -> tuple[str, str, str] | None:
    """(status, reason, message) of RolloutCoordinationReady; None without coordinated groups."""
    if not groups:
        return None
    failed = [str(g.get("name")) for g in groups if g.get("phase") == FAILED]
    if failed:
        return "False", "Failed", "rollout coordination failed in groups: " + ",".join(failed)
    moving = [
        f"{g.get('name')}:{g.get('phase')}" for g in groups if g.get("phase") not in (IDLE, STAGED, None)
    ]
    if moving:
        return "False", "InProgress", "rollout coordination in flight: " + ",".join(moving)
    if any(g.get("phase") is None for g in groups):
        return "Unknown", "Pending", "rollout coordination not yet observed"
    return "True", STAGED if any(g.get("phase") == STAGED for g in groups) else IDLE, ""


def transitions(
    previous: Mapping[str, Any] | None, groups: Sequence[Mapping[str, Any]]
) -> list[tuple[str, str, str]]:
    """(group, from phase, to phase) for every group whose phase changed ("" when it had none)."""
    before = {
        g.get("name"): g.get("phase") for g in (previous or {}).get("groups") or [] if isinstance(g, Mapping)
    }
    return [
        (str(g["name"]), str(before.get(g["name"]) or ""), str(g["phase"]))
        for g in groups
        if before.get(g["name"]) != g["phase"]
    ]


def failed_message(group: Mapping[str, Any]) -> str:
    components = ", ".join(group.get("components") or [])
    why = group.get("message") or "an Instance failed"
    return f"rollout group {group.get('name')} ({components}) failed: {why}"
