"""The rollout planner's inputs and outputs, and what it reads from an Instance's status row (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ome.omenative import instance_names as names
from ome.omenative import rollout_budget as budget
from ome.omenative import rollout_retry as retry
from ome.omenative.revisions import RevisionData
from ome.omenative.rollout_pods import RolloutPod

Row = dict[str, Any]
Event = tuple[str, str, str]

SURGE, SURGE_DRAIN, DRAIN, IN_PLACE = "Surge", "SurgeDrain", "Drain", "InPlace"
PAUSED = "Paused"
UNSCHEDULABLE = "Unschedulable"
QUOTA_EXCEEDED = "QuotaExceeded"
NODE_UNKNOWN = "NodeUnknown"
POD_GROUP_TERMINATING = "PodGroupTerminating"
HOLDS = (PAUSED, UNSCHEDULABLE, QUOTA_EXCEEDED, NODE_UNKNOWN, POD_GROUP_TERMINATING)
"""`operation.waiting` values: something outside the Instance holds the operation, and its clock stops."""


@dataclass(frozen=True, slots=True)
class Inputs:
    namespace: str
    replica: str
    base: str
    component: str
    desired: int
    update_revision: str
    revisions: Mapping[str, RevisionData]
    rows: Sequence[Row]
    pods: Sequence[RolloutPod]
    strategy: budget.Strategy
    retry_blocks: Sequence[retry.Block]
    policy: retry.RetryPolicy
    now: datetime
    ready_timeout: float | None = None
    unschedulable_grace: float | None = None
    min_ready_seconds: int = 0
    paused: bool = False
    annotations: Mapping[str, str] = field(default_factory=dict)
    previous_hold: Mapping[str, Any] | None = None
    rejected: Mapping[int, str] = field(default_factory=dict)
    """Instances whose pod the API server rejected this attempt (InvalidPodSpec), by index."""
    stuck_grace: float | None = None
    """stuckPodGracePeriod: seconds before a wedged pod of a Ready Instance restarts it (None: off)."""
    freeze: bool = False
    """pauseMode: Freeze: no repair starts either."""
    quota_refused: frozenset[int] = frozenset()
    """Instances whose pod creation a ResourceQuota refused on the last try (waiting QuotaExceeded)."""
    pod_group_terminating: frozenset[int] = frozenset()
    """Instances (a gang surge's replacement) whose PodGroup name is still held by a PodGroup being
    deleted: no pod of theirs was made (waiting PodGroupTerminating)."""


@dataclass(frozen=True, slots=True)
class PodCreate:
    index: int
    incarnation: int
    revision_hash: str
    runner: str
    ordinal: int

    def name(self, base: str, component: str) -> str:
        return names.pod_name(base, component, self.index, self.runner, self.ordinal)


@dataclass(slots=True)
class Plan:
    rows: dict[int, Row] = field(default_factory=dict)
    """Changed rows only, by index."""
    creates: list[PodCreate] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    open_gates: list[str] = field(default_factory=list)
    close_gates: list[str] = field(default_factory=list)
    image_patches: list[tuple[str, str]] = field(default_factory=list)
    """(pod name, revision hash) to patch in place."""
    events: list[Event] = field(default_factory=list)
    retry_blocks: list[retry.Block] = field(default_factory=list)
    rollout_hold: Row | None = None
    release_answered: bool = False
    removed: list[int] = field(default_factory=list)
    """Rows that go: a gang surge's source once its pods are gone, an abandoned replacement."""
    wake_after: float | None = None

    def wake(self, seconds: float | None) -> None:
        if seconds is None:
            return
        seconds = max(seconds, 0.5)
        self.wake_after = seconds if self.wake_after is None else min(self.wake_after, seconds)


def digest(revision: str) -> str:
    return names.hash_of_revision(revision)


def pod_count(inp: Inputs, row: Row) -> int:
    data = inp.revisions.get(digest(row.get("runningRevision") or ""))
    return data.pod_count if data else 1


def active(row: Row) -> int:
    return int(row.get("activeOrdinal") or 0)


def own_names(inp: Inputs, index: int, data: RevisionData, ordinal: int = 0) -> set[str]:
    """An Instance's pod names; a single-pod Instance's pod sits at its active ordinal."""
    if not data.multi_pod:
        return {names.pod_name(inp.base, inp.component, index, data.runners[0].name, ordinal)}
    return {
        names.pod_name(inp.base, inp.component, index, r.name, o) for r in data.runners for o in range(r.size)
    }


def moving(row: Row) -> bool:
    return row.get("phase") == "Updating" and (row.get("operation") or {}).get("type") == "Update"


def failed_update(row: Row) -> bool:
    return row.get("phase") == "Failed" and (row.get("operation") or {}).get("type") == "Update"


def _op_id(row: Row) -> object:
    return (row.get("operation") or {}).get("id")


def split_recorded(
    plan: Plan, cached: Mapping[int, Row], pod_index: Mapping[str, int]
) -> tuple[Plan, Plan]:
    """The plan's pod writes as (recorded, after_status). A gate, patch or delete on an Instance whose
    `Update` operation the cached status already records continues a step that status owns (the
    InferenceReplica planner never acts on such a row, and a lost status race only replans the same
    step), so it goes out with the status write rather than after it; so does a create for that same
    operation and incarnation. Every other write, above all a start's pod creation, follows the status
    write that records it."""
    recorded = {i for i, row in cached.items() if moving(row)}
    same_op = {
        i
        for i in recorded
        if i not in plan.rows
        or (
            _op_id(plan.rows[i]) == _op_id(cached[i])
            and plan.rows[i].get("incarnation") == cached[i].get("incarnation")
        )
    }

    def early(name: str) -> bool:
        return pod_index.get(name) in recorded

    first = Plan(
        creates=[c for c in plan.creates if c.index in same_op],
        deletes=[n for n in plan.deletes if early(n)],
        open_gates=[n for n in plan.open_gates if early(n)],
        close_gates=[n for n in plan.close_gates if early(n)],
        image_patches=[(n, d) for n, d in plan.image_patches if early(n)],
    )
    then = Plan(
        creates=[c for c in plan.creates if c not in first.creates],
        deletes=[n for n in plan.deletes if n not in first.deletes],
        open_gates=[n for n in plan.open_gates if n not in first.open_gates],
        close_gates=[n for n in plan.close_gates if n not in first.close_gates],
        image_patches=[p for p in plan.image_patches if p not in first.image_patches],
    )
    return first, then
