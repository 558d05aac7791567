"""Apply a coordination `Limit` to one replica's Instance rollout pass (pure).

The Instance rollout planner already honours a partition (the lowest-indexed Instances not on the update
revision stay where they are) and a budget (Instances moving at once). The limit narrows both for this
pass only, in memory: nothing is written to the replica's spec, so a limit can never outlive the state
it was computed from, and a revision the coordinator has not seen yet is held by the Plan gate.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ome.omenative import instance_names as names
from ome.omenative.coordination_types import Limit
from ome.omenative.pods_view import format_time
from ome.omenative.rollout_budget import Strategy

Row = dict[str, Any]


def _moving(row: Mapping[str, Any]) -> bool:
    return row.get("phase") == "Updating" and (row.get("operation") or {}).get("type") == "Update"


def constrain(
    strategy: Strategy, limit: Limit | None, rows: Sequence[Mapping[str, Any]], update_revision: str,
    desired: int,
) -> tuple[Strategy, tuple[str, str] | None]:
    """The strategy narrowed to the limit, and the (gate, reason) of what the limit holds back, if it
    holds back a start the strategy alone would allow."""
    if limit is None:
        return strategy, None
    target = names.hash_of_revision(update_revision)
    on_target = sum(
        1 for r in rows
        if r.get("phase") != "Deleting"
        and (_moving(r) or names.hash_of_revision(r.get("runningRevision") or "") == target)
    )
    moving_now = sum(1 for r in rows if _moving(r))
    waiting = sum(
        1 for r in rows
        if r.get("phase") in ("Ready", "Failed") and r.get("runningRevision") != update_revision
    )
    startable = max(waiting - strategy.partition, 0)
    held: tuple[str, str] | None = None
    out = strategy
    if limit.total is not None:
        allowed = max(limit.total - on_target, 0)
        if allowed < startable:
            out = dataclasses.replace(out, partition=waiting - allowed)
            held = (limit.gate, limit.reason)
            startable = allowed
    if limit.moving is not None:
        own = strategy.budget(desired)
        if own is None or limit.moving < own:
            if strategy.surge:
                out = dataclasses.replace(out, max_surge=limit.moving)
            else:
                out = dataclasses.replace(out, max_unavailable=limit.moving)
            if held is None and startable > 0 and moving_now >= limit.moving:
                held = (limit.moving_gate or limit.gate, limit.moving_reason or limit.reason)
    return out, held


def hold(
    held: tuple[str, str], previous: Mapping[str, Any] | None, now: datetime, update_revision: str
) -> Row:
    """The rolloutHold of a start the limit holds back (its `since` kept while gate and reason stay)."""
    previous = previous or {}
    gate, reason = held
    same = previous.get("gate") == gate and previous.get("reason") == reason
    return {
        "gate": gate,
        "reason": reason,
        "since": (previous.get("since") if same else None) or format_time(now),
        "target": update_revision,
    }
