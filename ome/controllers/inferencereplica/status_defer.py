"""Whether an InferenceReplica's status write can wait for the pass that follows (pure).

A pass that opens serving gates finds the Instance's containers ready, so its status differs from the
stored one only in counts observed from the pods (ready, available, per-Instance pod counts); the gate
makes the kubelet mark the pods Ready within a status round, and that pod event brings the pass that
writes the serving counts and the Ready phase. Writing both is one status write per Instance start (and
per rollout step) more than needed; the first is skipped when nothing but those counts changed (every
Instance's phase, operation and revisions as stored) and the pass records no event (a once-only event
is stamped by the write that follows it). The counts are recomputed from the pods by every pass, so
nothing is lost. `GATE_RECHECK` bounds the wait should the pod event not come: that pass opens no gate
and writes.

The same holds a step earlier: the pass that the new pods' creation events bring finds only the rows'
pod counts moved (`podCount`, `admitted`) while the containers start, and the pass their start brings
changes more. Within `START_WINDOW` seconds of an Instance's Create operation such a write waits
(`start_counts_wait`); after it, counts are written as they move, so a pod that stays Pending shows in
the status at most `START_WINDOW` late. The window is read from the row's `operation.startedAt`, so a
restart or a new leader keeps it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from ome.omenative.pods_view import parse_time

COUNT_FIELDS: Final = frozenset({"readyReplicas", "updatedReadyReplicas", "availableReplicas"})
"""What a gate opening changes before the kubelet shows its effect (containers ready, not yet serving)."""
ROW_COUNT_FIELDS: Final = frozenset({"podCount", "servingPodCount", "availablePodCount", "admitted"})
"""An Instance row's counts of its pods (ome.omenative.instances.counted), recomputed by every pass."""
GATE_RECHECK: Final = 30.0
"""Seconds after which a pass looks again (kwok folds a gate into Ready in about 10 s under load)."""
START_WINDOW: Final = 10.0
"""Seconds from an Instance's Create start during which a change of its pod counts alone waits."""


def gate_follows(
    old: Mapping[str, Any], new: Mapping[str, Any], *, opened_gates: Sequence[str], events: Sequence[Any]
) -> bool:
    """True: skip writing `new` (the pass opened gates and only the ready counts moved)."""
    if not opened_gates or events or old == new:
        return False
    return _without_counts(old) == _without_counts(new)


def _without_counts(status: Mapping[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in status.items() if k not in COUNT_FIELDS}
    if isinstance(rows := kept.get("instanceStatuses"), list):
        kept["instanceStatuses"] = [
            {k: v for k, v in row.items() if k not in ROW_COUNT_FIELDS} if isinstance(row, Mapping) else row
            for row in rows
        ]
    return kept


def start_counts_wait(
    old: Mapping[str, Any], new: Mapping[str, Any], *, now: datetime, events: Sequence[Any]
) -> float | None:
    """Seconds `new` may stay unwritten: only pod counts moved, each on an Instance within `START_WINDOW`
    of its Create start (the pass its pods' start brings writes them with more); None: write now."""
    if events or old == new or _without_counts(old) != _without_counts(new):
        return None
    before = {row.get("index"): row for row in _rows(old)}
    wait: float | None = None
    for row in _rows(new):
        if before.get(row.get("index")) == row:
            continue
        operation = row.get("operation") or {}
        started = parse_time(operation.get("startedAt"))
        if row.get("phase") != "Creating" or operation.get("type") != "Create" or started is None:
            return None
        left = START_WINDOW - (now - started).total_seconds()
        if left <= 0:
            return None
        wait = left if wait is None else min(wait, left)
    return wait


def _rows(status: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    rows = status.get("instanceStatuses")
    return [r for r in rows if isinstance(r, Mapping)] if isinstance(rows, list) else []
