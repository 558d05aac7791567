"""Operator-level settings the Instance rollout controller reads (wired from inferenceservice-config)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ome.omenative.rollout_budget import OperatorDefault
from ome.omenative.rollout_retry import RetryPolicy


@dataclass(frozen=True, kw_only=True, slots=True)
class RolloutSettings:
    defaults: Mapping[str, OperatorDefault] = field(default_factory=dict)
    """deploy.updateStrategy.<component>: the operator default strategy per component."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    """lifecycle.updateRetry; without it (a manifest install) the first counted failure holds."""
    instance_ready_timeout: float | None = 1800.0
    """Bounds each update attempt when the component's lifecycle.instanceReadyTimeout is unset."""
    unschedulable_grace: float | None = None
    """lifecycle.unschedulableGracePeriod: a surge pod unschedulable this long fails the attempt."""
    gang_schedule_timeout: tuple[float, float] | None = None
    """lifecycle.gangScheduleTimeout (min, max): clamps the PodGroup scheduleTimeoutSeconds of a gang
    replacement, as the replica controller's PodGroups are (ome.omenative.gang_timeout)."""
    stuck_grace: float | None = None
    """lifecycle.stuckPodGracePeriod: a pod of a Ready Instance wedged this long restarts it (None: off)."""
    columnar: bool = False
    """Write per-Instance rows in ColumnarV2 whenever that is smaller (as the replica controller does)."""
    max_decoded_instances: int | None = 20000
    """omenativeStatus.maxDecodedInstances: above it the rows are written as the list, as the replica
    controller writes them (the two must agree, or they would rewrite each other's status)."""
    event_component: str = "ome-inferencereplica-controller"
    ratio_tolerance: int = 5
    """coordination.defaultRatioTolerancePercent: a rollout group's maintainRatio without a tolerance."""
    max_concurrent_reconciles: int = 4

    def __post_init__(self) -> None:
        if self.instance_ready_timeout is not None and self.instance_ready_timeout < 0:
            raise ValueError("instance_ready_timeout must not be negative (0 counts as unset)")
        if self.retry.max_attempts < 1:
            raise ValueError("updateRetry.maxAttempts must be >= 1")
        if self.max_concurrent_reconciles < 1:
            raise ValueError("max_concurrent_reconciles must be >= 1")
