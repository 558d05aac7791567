"""Rollout coordination (pure): what the coordinator sees of each grouped component, and what it decides.

A `Member` is one component's InferenceReplica read as the coordinator needs it (counts per revision, its
update strategy, whether its status is in step with the InferenceService generation). A progression
returns a `GroupDecision`: per component, a `Limit` on how many Instances may be on (or moving to) the
component's update revision, the gate and reason that hold it, and the group's phase for status.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from ome.omenative import instance_names as names
from ome.omenative import status as replica_status
from ome.resolution import naming

# Gates of status.components.<c>.lifecycle.rolloutHold (documented names).
GATE_PLAN: Final = "Plan"
GATE_PAIRING: Final = "Pairing"
GATE_RATIO: Final = "Ratio"
GATE_SEQUENTIAL: Final = "Sequential"
GATE_BUDGET: Final = "Budget"

# Group phases (status.rolloutCoordination.groups[].phase).
IDLE: Final = "Idle"
SURGING: Final = "Surging"
WAITING: Final = "Waiting"
SHIFTING: Final = "Shifting"
SCALING_DOWN: Final = "ScalingDown"
STAGED: Final = "Staged"
FAILED: Final = "Failed"
PAUSED: Final = "Paused"

# Progression kinds (the spec's field names) and the coordination policies reported in status.
BLUE_GREEN: Final = "blueGreen"
ROLLING_UPDATE: Final = "rollingUpdate"
CANARY: Final = "canary"
SEQUENTIAL: Final = "sequential"
POLICY_OF: Final = {BLUE_GREEN: "BlueGreen", ROLLING_UPDATE: "RollingUpdate", SEQUENTIAL: "Sequential"}

IN_PLACE_STRATEGIES: Final = frozenset({"InPlaceIfPossible", "InPlaceOnly"})
PAUSE_ANNOTATION: Final = "ome.io/rollout-paused"


@dataclass(frozen=True, slots=True)
class Member:
    """One grouped component, from its InferenceReplica (see `member_of`)."""

    component: str
    desired: int
    target: str
    """The update revision's hash ("" while the replica has none)."""
    current: str
    """The revision that last finished rolling out ("" before the first)."""
    on_target: int = 0
    """Instances running the target, or moving to it."""
    ready_target: int = 0
    """Ready Instances running the target."""
    serving_target: int = 0
    """Instances running the target with a pod in rotation."""
    moving: int = 0
    """Instances moving to the target now."""
    old: int = 0
    """Instances on another revision, not moving."""
    serving_old: int = 0
    """Instances on another revision (moving or not) with a pod in rotation."""
    failed: bool = False
    """An Instance is Failed (the replica's Ready says InstanceFailed)."""
    synced: bool = True
    """The replica's spec and status reflect the InferenceService generation the coordinator reads."""
    strategy: str = "SurgeThenDrain"
    pairing_protocol: str | None = None
    """The target revision's pairing protocol token (None: none)."""
    ready_since: datetime | None = None
    """When the replica's Ready condition last turned True (a rollout's end), while it is True."""
    partition: int = 0
    """The update strategy's `rollingUpdate.partition`: Instances held on the prior revision."""

    @property
    def rolling(self) -> bool:
        """A rollout is in flight: some Instance is not on the target yet, or the replica has not
        recorded the target as its current revision (its Ready condition then still says so)."""
        return self.old > 0 or self.moving > 0 or (bool(self.current) and self.current != self.target)

    @property
    def done(self) -> bool:
        return not self.rolling

    @property
    def staged(self) -> bool:
        """The rollout went as far as the partition lets it: nothing moves, every Instance on the target is
        Ready, and the old ones left are no more than the partition holds (kubectl-ome/rollout.md, Staged)."""
        return (
            self.partition > 0 and self.rolling and self.moving == 0 and 0 < self.old <= self.partition
            and self.ready_target == self.on_target and self.on_target >= self.desired - self.partition
        )


@dataclass(frozen=True, slots=True)
class Limit:
    """How far one component's rollout may go now. None: no cap from the coordinator."""

    total: int | None = None
    """Instances on the target or moving to it, at most."""
    moving: int | None = None
    """Instances moving at once, at most."""
    gate: str = ""
    reason: str = ""
    """rolloutHold when `total` holds a start back."""
    moving_gate: str = ""
    moving_reason: str = ""
    """rolloutHold when `moving` holds a start back (the gate of `total` when empty)."""


@dataclass(slots=True)
class GroupDecision:
    """A progression's answer for one group this pass."""

    limits: dict[str, Limit] = field(default_factory=dict)
    phase: str = IDLE
    message: str = ""
    composite_phase: str | None = None
    current_component: str | None = None
    previous_component: str | None = None
    observed_ratio: dict[str, dict[str, int]] | None = None
    wake_after: float | None = None

    def wake(self, seconds: float) -> None:
        seconds = max(seconds, 0.5)
        self.wake_after = seconds if self.wake_after is None else min(self.wake_after, seconds)


@dataclass(frozen=True, slots=True)
class GroupContext:
    """What a progression reads: its group as declared, its members, and the InferenceService."""

    index: int
    name: str
    kind: str
    """blueGreen, rollingUpdate, canary, or sequential (a sequence of single-component groups)."""
    group: Mapping[str, Any]
    """The spec group (for a sequence: the first group of it)."""
    order: Sequence[str]
    """The components in rollout order (a sequence: list order; otherwise as declared)."""
    members: Mapping[str, Member]
    isvc: Mapping[str, Any]
    now: datetime
    soak: float = 0.0
    """A sequence's wait between components (the longest soak of any group but the last)."""
    ratio_tolerance: int = 5
    """coordination.defaultRatioTolerancePercent, used when maintainRatio sets no tolerance."""


# -- observing a replica ---------------------------------------------------------------------------


def member_of(component: str, replica: Mapping[str, Any] | None, isvc_generation: int | None,
              strategy: str, pairing_protocol: str | None = None, partition: int = 0) -> Member:
    """A component's Member; a replica not there yet is an unsynced, empty member (nothing moves)."""
    if replica is None:
        return Member(component, 0, "", "", synced=False, strategy=strategy)
    meta, spec, status = replica["metadata"], replica.get("spec") or {}, replica.get("status") or {}
    target = _hash(status.get("updateRevision"))
    current = _hash(status.get("currentRevision"))
    parent_gen = (meta.get("annotations") or {}).get(naming.PARENT_GENERATION_ANNOTATION)
    synced = (
        bool(target)
        and status.get("observedGeneration") == meta.get("generation")
        and (isvc_generation is None or parent_gen == str(isvc_generation))
    )
    counts = {"on_target": 0, "ready_target": 0, "serving_target": 0, "moving": 0, "old": 0, "serving_old": 0}
    failed = False
    for row in replica_status.rows_of(status):
        running = names.hash_of_revision(row.get("runningRevision") or "")
        moving = row.get("phase") == "Updating" and _hash(row.get("targetRevision")) == target
        serving = int(row.get("servingPodCount") or 0) > 0
        failed = failed or row.get("phase") == "Failed"
        if row.get("phase") == "Deleting":
            continue
        if running == target and not moving:
            counts["on_target"] += 1
            counts["ready_target"] += row.get("phase") == "Ready"
            counts["serving_target"] += serving
        elif moving:
            counts["on_target"] += 1
            counts["moving"] += 1
            counts["serving_old"] += serving
        else:
            counts["old"] += 1
            counts["serving_old"] += serving
    desired = spec.get("replicas")
    return Member(
        component=component,
        desired=int(desired) if desired is not None else 1,
        target=target,
        current=current,
        failed=failed,
        synced=synced,
        strategy=strategy,
        pairing_protocol=pairing_protocol,
        ready_since=_ready_since(status),
        partition=partition,
        **counts,
    )


def _hash(revision: str | None) -> str:
    return names.hash_of_revision(revision) if revision else ""


def _ready_since(status: Mapping[str, Any]) -> datetime | None:
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready" and cond.get("status") == "True" and cond.get("lastTransitionTime"):
            return datetime.fromisoformat(str(cond["lastTransitionTime"]).replace("Z", "+00:00"))
    return None
