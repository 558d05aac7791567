"""OMENative scale-down waves (configure-pod-batching.md): which Instances are drained and deleted in this
pass. Pure.

`lifecycle.scaleDownPodBatchSize` caps the pod-equivalent cost of the Instances a component drains,
deletes and cleans up at once. An Instance costs its pods (live and Terminating), or 1 once its pods are
gone but its row remains. Deletion work already under way (Deleting rows) is resumed first, oldest first,
and no new Instance starts deleting until none is left; only then are the extras past the desired count
admitted, highest index first. Either way Instances are taken whole while they fit, and the first one
proceeds alone when it alone is larger than the budget (an "oversized" wave). Everything left out is
deferred to a later pass, which `scaleDownRequeueInterval` (a fallback: pod events come sooner) brings.

No budget: every extra starts deleting at once and every Deleting Instance is driven, as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ome.omenative.pods_view import PodView, parse_time

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Wave:
    budget: int | None
    active: frozenset[int]
    """Instances driven this pass (drained, deleted, their rows dropped once their pods are gone)."""
    admitted: frozenset[int]
    """Extras that start deleting this pass (a subset of `active`; empty while older work remains)."""
    deferred: frozenset[int]
    """Instances eligible for scale-down that wait outside this wave."""
    cost: int
    """Pod-equivalent cost of `active`."""
    oversized: bool
    """The wave is one Instance larger than the budget."""

    @property
    def in_progress(self) -> bool:
        return bool(self.active or self.deferred)

    def summary(self) -> dict[str, Any]:
        """The documented fields of the `OMENative scale-down wave` log line after the identity."""
        return {
            "podBudget": "unbounded" if self.budget is None else self.budget,
            "activePodCost": self.cost,
            "activeInstances": len(self.active),
            "admittedInstances": len(self.admitted),
            "deferredInstances": len(self.deferred),
        }


def instance_cost(pods: Sequence[PodView]) -> int:
    return max(len(pods), 1)


def deleting(row: Mapping[str, Any]) -> bool:
    """Deletion work this controller owns: a Deleting row under a Delete operation."""
    return row.get("phase") == "Deleting" and (row.get("operation") or {}).get("type") == "Delete"


def select(
    rows: Mapping[int, Mapping[str, Any]],
    extras: Iterable[int],
    pods: Mapping[int, Sequence[PodView]],
    budget: int | None,
) -> Wave:
    """This pass's wave from the previous rows, the extras `choose` picked and the pods by index."""
    if budget is not None and budget <= 0:
        raise ValueError("scaleDownPodBatchSize must be positive")
    owned = [i for i, r in rows.items() if deleting(r)]
    fresh = sorted((i for i in set(extras) if not deleting(rows.get(i) or {})), reverse=True)
    if budget is None:
        active = frozenset(owned) | frozenset(fresh)
        cost = sum(instance_cost(pods.get(i, ())) for i in active)
        return Wave(None, active, frozenset(fresh), frozenset(), cost, False)
    if owned:
        pool = sorted(owned, key=lambda i: (_started(rows[i]), -i))
        blocked = frozenset(fresh)
    else:
        pool, blocked = fresh, frozenset()
    chosen: list[int] = []
    cost = 0
    oversized = False
    for index in pool:
        size = instance_cost(pods.get(index, ()))
        if chosen and cost + size > budget:
            break
        if not chosen and size > budget:
            oversized = True
        chosen.append(index)
        cost += size
    active = frozenset(chosen)
    deferred = frozenset(pool[len(chosen):]) | blocked
    return Wave(budget, active, active if not owned else frozenset(), deferred, cost, oversized)


def _started(row: Mapping[str, Any]) -> datetime:
    return parse_time((row.get("operation") or {}).get("startedAt")) or _EPOCH


__all__ = ["Wave", "deleting", "instance_cost", "select"]
