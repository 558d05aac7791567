"""Rollout pacing (pure): the effective update strategy, its budgets, and surge-slot accounting.

A budget is a whole number or a percentage of the component's desired Instances, rounded up ("25%" of
two Instances is one). None means no cap. Each field of the strategy comes from the first layer that
sets it: the replica's `lifecycle.updateStrategy` (the InferenceService and runtime, already merged by
the InferenceService controller), then the operator default `deploy.updateStrategy.<component>`, then
`SurgeThenDrain`. Only the budget the strategy reads is filled from the operator default.

Surge slots: every pod the API still lists for an Instance beyond the Instance's own pods holds one: a
Terminating pod until its deletion grace elapses (deletion time plus its grace period), a live extra pod
until an update start on its Instance evicts it. Multi-pod Instances count extra pods in whole Instances
(rounded up).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

SURGE: Final = "SurgeThenDrain"
RECREATE: Final = "RecreatePod"
IN_PLACE_IF_POSSIBLE: Final = "InPlaceIfPossible"
IN_PLACE_ONLY: Final = "InPlaceOnly"
STRATEGIES: Final = frozenset({SURGE, RECREATE, IN_PLACE_IF_POSSIBLE, IN_PLACE_ONLY})


@dataclass(frozen=True, slots=True)
class OperatorDefault:
    """deploy.updateStrategy.<component> of inferenceservice-config."""

    type: str = SURGE
    max_surge: int | str | None = None
    max_unavailable: int | str | None = None


@dataclass(frozen=True, slots=True)
class Strategy:
    type: str
    max_surge: int | str | None
    max_unavailable: int | str | None
    partition: int
    mark_not_ready: bool = True
    """inPlaceUpdateStrategy.markNotReadyDuringLifecycle: take the pod out of rotation while it restarts."""

    @property
    def surge(self) -> bool:
        return self.type == SURGE

    def budget_field(self) -> str:
        return "maxSurge" if self.surge else "maxUnavailable"

    def budget(self, desired: int) -> int | None:
        """The budget this strategy reads, resolved against the desired Instances."""
        return resolve(self.max_surge if self.surge else self.max_unavailable, desired)


def resolve(value: int | str | None, total: int) -> int | None:
    """A whole number, or a percentage of `total` rounded up; None stays None (no cap)."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if text.endswith("%"):
            return math.ceil(total * int(text[:-1]) / 100)
        return int(text)
    return int(value)


def effective(
    lifecycle: Mapping[str, Any], default: OperatorDefault | None, pacing: Mapping[str, Any]
) -> Strategy:
    """The update strategy in force, filled field by field (see the module docstring)."""
    spec = lifecycle.get("updateStrategy") or {}
    rolling = spec.get("rollingUpdate") or {}
    default = default or OperatorDefault()
    type_ = spec.get("type") or default.type or SURGE
    if type_ not in STRATEGIES:
        type_ = SURGE
    surge_value = rolling.get("maxSurge")
    unavailable = rolling.get("maxUnavailable", pacing.get("maxUnavailable"))
    if type_ == SURGE and surge_value is None:
        surge_value = default.max_surge
    if type_ != SURGE and unavailable is None:
        unavailable = default.max_unavailable
    partition = rolling.get("partition", pacing.get("partition"))
    in_place = spec.get("inPlaceUpdateStrategy") or {}
    return Strategy(
        type=type_,
        max_surge=surge_value,
        max_unavailable=unavailable,
        partition=int(partition or 0),
        mark_not_ready=in_place.get("markNotReadyDuringLifecycle") is not False,
    )


def filled(lifecycle: Mapping[str, Any], default: OperatorDefault | None) -> dict[str, Any]:
    """`lifecycle.updateStrategy` with the operator default filled as documented: the type, then only
    the budget that type reads ({"rollingUpdate": {"maxUnavailable": "25%"}, "type": "InPlaceIfPossible"})."""
    spec = dict(lifecycle.get("updateStrategy") or {})
    default = default or OperatorDefault()
    spec.setdefault("type", default.type or SURGE)
    rolling = dict(spec.get("rollingUpdate") or {})
    field, value = (
        ("maxSurge", default.max_surge)
        if spec["type"] == SURGE
        else ("maxUnavailable", default.max_unavailable)
    )
    if field not in rolling and value is not None:
        rolling[field] = value
    if rolling:
        spec["rollingUpdate"] = rolling
    return spec


# -- surge slots -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExtraPod:
    """A pod listed for an Instance beyond its own pods."""

    name: str
    index: int
    terminating: bool
    grace_ends: datetime | None = None
    """For a Terminating pod: when its deletion grace elapses (it stops holding a slot then)."""


def deletion_grace_end(meta: Mapping[str, Any]) -> datetime | None:
    """deletionTimestamp is the moment the grace ends (the apiserver sets it to request time + grace)."""
    stamp = meta.get("deletionTimestamp")
    if not stamp:
        return None
    return datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))


def holding(extra: Iterable[ExtraPod], now: datetime) -> list[ExtraPod]:
    """The extra pods that still hold a slot: live ones, and Terminating ones inside their grace."""
    return [p for p in extra if not p.terminating or (p.grace_ends is not None and now < p.grace_ends)]


def extra_slots(extra: Iterable[ExtraPod], pods_per_instance: Mapping[int, int]) -> int:
    """Slots the extra pods hold: per Instance, their count over its pod count, rounded up."""
    by_index: dict[int, int] = {}
    for pod in extra:
        by_index[pod.index] = by_index.get(pod.index, 0) + 1
    return sum(math.ceil(n / max(pods_per_instance.get(i, 1), 1)) for i, n in by_index.items())


def next_release(extra: Iterable[ExtraPod], now: datetime) -> float | None:
    """Seconds until the first Terminating extra pod's grace elapses: the moment to wake."""
    ends = [p.grace_ends for p in extra if p.terminating and p.grace_ends is not None and p.grace_ends > now]
    return min((e - now).total_seconds() for e in ends) if ends else None


# -- messages ---------------------------------------------------------------------------------


def surge_denied(budget: int, projected: int, extra: Iterable[ExtraPod]) -> str:
    clauses = "".join(_extra_clause(p) for p in sorted(extra, key=lambda p: p.name))
    return f"per-Component surge budget {budget} exhausted (would become {projected}){clauses}"


def unavailability_denied(budget: int, projected: int) -> str:
    return f"per-Component unavailability budget {budget} exhausted (would become {projected})"


def _extra_clause(pod: ExtraPod) -> str:
    if pod.terminating:
        return (
            f"; Terminating pod {pod.name} still counts against the surge budget until its deletion grace "
            "elapses"
        )
    return f"; extra pod {pod.name} holds a surge slot until a start on its Instance replaces it"
