"""InferenceReplica status from the planned rows and the observed pods (pure).

Counts follow "Readiness and availability": an Instance counts as ready, serving or available when
at least its desired number of pods are. `Ready` takes the first matching reason of seven, in the
documented order; five more conditions flag problems without changing it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from ome.omenative import columnar
from ome.omenative import instance_names as names
from ome.omenative.instances import available, members
from ome.omenative.pods_view import PodView, format_time, go_duration, parse_time
from ome.omenative.revisions import RevisionData

Obj = dict[str, Any]
Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Inputs:
    replica: Mapping[str, Any]
    rows: Sequence[Row]
    pods: Sequence[PodView]
    revisions: Mapping[str, RevisionData]
    desired: int
    update_revision: str
    now: datetime
    min_ready_seconds: int = 0
    ready_timeout_configured: bool = True
    ready_timeout: float | None = None
    """The readiness timeout that applies, in seconds, for the condition's message."""
    gang_scheduling_available: bool = True
    migration_audit_configured: bool = True
    columnar: bool = False
    max_rows: int | None = None
    """omenativeStatus.maxDecodedInstances: above it the rows are written as the DenseV1 list."""


@dataclass(frozen=True, slots=True)
class Counts:
    replicas: int
    ready: int
    serving: int
    available: int
    updated: int
    updated_ready: int
    phase_ready: int
    failed: int


def compute(inp: Inputs) -> Obj:
    spec, prev = inp.replica.get("spec") or {}, inp.replica.get("status") or {}
    counts = count(inp)
    current = current_revision(prev.get("currentRevision"), inp.rows, inp.update_revision, inp.desired)
    base = names.base_name(inp.replica)
    status: Obj = {
        "observedGeneration": inp.replica["metadata"].get("generation"),
        "replicas": counts.replicas,
        "readyReplicas": counts.ready,
        "servingReplicas": counts.serving,
        "availableReplicas": counts.available,
        "updatedReplicas": counts.updated,
        "updatedReadyReplicas": counts.updated_ready,
        "currentRevision": current,
        "updateRevision": inp.update_revision,
        "collisionCount": prev.get("collisionCount"),
        "labelSelector": names.label_selector_string(base, spec["component"]),
        # Written by the Instance rollout controller (ome.controllers.instancerollout): carried as is.
        "retryBlocks": prev.get("retryBlocks") or None,
        "rolloutHold": prev.get("rolloutHold"),
        # Written by the migration controller (ome.controllers.migration): carried as is.
        "migrations": prev.get("migrations") or None,
    }
    status.update(instance_rows(inp.rows, inp.columnar, inp.max_rows))
    status["conditions"] = merge_conditions(
        prev.get("conditions") or [], conditions(inp, counts, current), inp.now
    )
    return {k: v for k, v in status.items() if v is not None}


def count(inp: Inputs) -> Counts:
    ready = serving = avail = updated = updated_ready = phase_ready = failed = 0
    by_index: dict[int, list[PodView]] = {}
    for pod in inp.pods:
        by_index.setdefault(pod.index, []).append(pod)
    for row in inp.rows:
        data = inp.revisions.get(names.hash_of_revision(row.get("runningRevision") or ""))
        want = data.pod_count if data else 1
        current = members(row, by_index.get(int(row["index"]), []))
        is_ready = sum(p.containers_ready for p in current) >= want
        ready += is_ready
        serving += sum(p.serving for p in current) >= want
        avail += sum(available(p, inp.min_ready_seconds, inp.now) for p in current) >= want
        on_update = row.get("runningRevision") == inp.update_revision
        updated += on_update
        updated_ready += on_update and is_ready
        phase_ready += row.get("phase") == "Ready"
        failed += row.get("phase") == "Failed"
    return Counts(len(inp.rows), ready, serving, avail, updated, updated_ready, phase_ready, failed)


def current_revision(previous: str | None, rows: Sequence[Row], update: str, desired: int) -> str:
    """The revision serving traffic: the previous one until every Instance runs the update revision."""
    live = [r for r in rows if r.get("phase") != "Deleting"]
    if not previous or (len(live) >= desired and all(r.get("runningRevision") == update for r in live)):
        return update
    return previous


def instance_rows(rows: Sequence[Row], use_columnar: bool, max_rows: int | None = None) -> Obj:
    """The rows as ColumnarV2 columns when asked and smaller, else as the DenseV1 list; above `max_rows`
    (omenativeStatus.maxDecodedInstances) always the list, which any reader can decode."""
    dense = [columnar.canonical_row(r) for r in sorted(rows, key=lambda r: int(r["index"]))]
    if use_columnar and dense and (max_rows is None or len(dense) <= max_rows):
        columns = columnar.encode(dense)
        if _size(columns) < _size(dense):
            return {"instanceStatusEncoding": "ColumnarV2", "instanceStatusColumns": columns}
    return {"instanceStatuses": dense}


def _size(value: object) -> int:
    return len(orjson.dumps(value))  # the bytes the client sends


class DecodeFailed(Exception):
    """Stored ColumnarV2 status OME will not decode; `reason` as InstanceStatusDecodeFailed names it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def decode_rows(status: Mapping[str, Any], max_decoded: int | None) -> list[Row]:
    """rows_of, bounded: ColumnarV2 with more rows than maxDecodedInstances, or with no bound set, raises
    DecodeFailed("cardinality_limit") (change-the-status-encoding.md §The status can't be decoded)."""
    rows = rows_of(status)
    if status.get("instanceStatusEncoding") == "ColumnarV2" and status.get("instanceStatusColumns") and (
            max_decoded is None or len(rows) > max_decoded):
        raise DecodeFailed("cardinality_limit")
    return rows


def rows_of(status: Mapping[str, Any]) -> list[Row]:
    """Per-Instance rows from either encoding."""
    if status.get("instanceStatusEncoding") == "ColumnarV2" and status.get("instanceStatusColumns"):
        return columnar.decode(dict(status["instanceStatusColumns"]))
    return [dict(r) for r in status.get("instanceStatuses") or []]


def minimum_available(replica: Mapping[str, Any], desired: int) -> int:
    """Desired less the update strategy's maxUnavailable (a percentage rounded up), or all of them."""
    spec = replica.get("spec") or {}
    rolling = ((spec.get("lifecycle") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
    budget = rolling.get("maxUnavailable")
    if budget is None:
        budget = (spec.get("pacing") or {}).get("maxUnavailable")
    if budget is None:
        return desired
    if isinstance(budget, str) and budget.endswith("%"):
        budget = math.ceil(desired * int(budget[:-1]) / 100)
    return max(desired - int(budget), 0)


def partition(replica: Mapping[str, Any]) -> int:
    spec = replica.get("spec") or {}
    rolling = ((spec.get("lifecycle") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
    value = (spec.get("pacing") or {}).get("partition", rolling.get("partition"))
    return int(value or 0)


def ready_condition(inp: Inputs, c: Counts, current: str) -> tuple[str, str, str]:
    """(status, reason, message): the first row of the documented table that applies."""
    total, rollout = inp.desired, current != inp.update_revision
    held = c.replicas - c.updated
    part = partition(inp.replica)
    minimum = minimum_available(inp.replica, total)
    if c.failed:
        return "False", "InstanceFailed", "At least one Instance has Phase=Failed"
    if rollout and part > 0 and c.updated >= total - part:
        return (
            "True",
            "Staged",
            f"Staged at partition {part}: {c.updated}/{total} Instances on "
            f"{inp.update_revision}, {held} held on the prior revision",
        )
    if rollout:
        return (
            "Unknown",
            "RolloutInProgress",
            f"Rolling out {inp.update_revision} ({c.updated}/{total} Instances on target)",
        )
    if total == 0:
        return "False", "NoReplicas", "InferenceReplica has no desired Instances"
    if c.phase_ready >= total and c.replicas == total and c.serving >= total:
        return "True", "AllInstancesReady", f"{c.phase_ready}/{total} Instances Ready"
    if c.serving >= minimum:
        return "True", "MinimumAvailable", f"{c.serving}/{total} Instances serving (min {minimum})"
    return (
        "False",
        "ReplicaCountMismatch",
        f"{c.serving}/{total} Instances serving, need {minimum} (no rollout in flight)",
    )


def conditions(inp: Inputs, c: Counts, current: str) -> list[tuple[str, str, str, str]]:
    """(type, status, reason, message) for every condition this controller owns."""
    rollout = current != inp.update_revision
    multi = any(d.multi_pod for d in inp.revisions.values())
    overdue = [r["index"] for r in inp.rows if r.get("phase") == "Deleting" and _past(r, inp.now)]
    waiting = _migration_requests(inp.replica) and not inp.migration_audit_configured
    return [
        ("Ready", *ready_condition(inp, c, current)),
        (
            "RolloutStalled",
            *(
                ("True", "InstancesFailing", f"{c.failed} Instance(s) failed mid-rollout")
                if rollout and c.failed
                else ("True", "InstancesFailing", f"updates to {inp.update_revision} are held")
                if rollout and _held(inp)
                else ("False", "Progressing", "No Instance is failing")
            ),
        ),
        (
            "DrainOverdue",
            *(
                ("True", "DrainsOverdue", f"Instances past their drain deadline: {overdue}")
                if overdue
                else ("False", "DrainsWithinDeadline", "No drain is overdue")
            ),
        ),
        (
            "GangSchedulingUnavailable",
            *(
                (
                    "True",
                    "PodGroupCRDNotInstalled",
                    "The scheduler-plugins PodGroup CRD is not installed; multi-pod Instances may "
                    "schedule partially",
                )
                if multi and not inp.gang_scheduling_available
                else ("False", "GangSchedulingAvailable", "Gang scheduling is available or not needed")
            ),
        ),
        (
            "MigrationPolicyUnconfigured",
            *(
                ("True", "MigrationCapacityUnconfigured", "ome.controller.lifecycle.audit is not set")
                if waiting
                else ("False", "MigrationCapacityConfigured", "No migration request is waiting")
            ),
        ),
        (
            "InstanceReadyTimeoutUnconfigured",
            *(
                ("False", "InstanceReadyTimeoutConfigured", _deadline_message(inp.ready_timeout))
                if inp.ready_timeout_configured
                else (
                    "True",
                    "InstanceReadyTimeoutUnconfigured",
                    "no instanceReadyTimeout is set: neither the component's lifecycle.instanceReadyTimeout "
                    "nor the operator's default, so an unready Instance waits instead of failing",
                )
            ),
        ),
    ]


def _held(inp: Inputs) -> bool:
    """The update revision is Held: its retries ran out while the old Instances keep serving."""
    blocks = (inp.replica.get("status") or {}).get("retryBlocks") or []
    return any(b.get("targetRevision") == inp.update_revision and b.get("state") == "Held" for b in blocks)


def _deadline_message(timeout: float | None) -> str:
    if timeout is None:
        return "An Instance readiness deadline applies"
    return f"Instance readiness deadline is {go_duration(timeout)}"


def _past(row: Row, now: datetime) -> bool:
    deadline = parse_time((row.get("operation") or {}).get("deadline"))
    return deadline is not None and now >= deadline


def _migration_requests(replica: Mapping[str, Any]) -> bool:
    """A request waits: an annotation not yet taken, or a record still Accepted."""
    annotations = (replica.get("metadata") or {}).get("annotations") or {}
    records = (replica.get("status") or {}).get("migrations") or []
    return any(k.startswith("ome.io/migration-request-v1-") for k in annotations) or any(
        r.get("phase") == "Accepted" for r in records
    )


def merge_conditions(
    previous: Iterable[Mapping[str, Any]], wanted: Iterable[tuple[str, str, str, str]], now: datetime
) -> list[Obj]:
    """Conditions with lastTransitionTime kept while the status is unchanged (so a resync writes nothing)."""
    old = {c.get("type"): c for c in previous}
    out = []
    for type_, status, reason, message in wanted:
        prior = old.get(type_) or {}
        since = prior.get("lastTransitionTime") if prior.get("status") == status else None
        out.append(
            {
                "type": type_,
                "status": status,
                "reason": reason,
                "message": message,
                "lastTransitionTime": since or format_time(now),
            }
        )
    return out
