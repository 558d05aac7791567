"""Operator-level settings the InferenceReplica controller reads (wired from inferenceservice-config)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

StatusEncoding = Literal["ColumnarV2", "Rows"]


@dataclass(frozen=True, kw_only=True, slots=True)
class InferenceReplicaSettings:
    instance_ready_timeout: float | None = 1800.0
    """Seconds an Instance operation may run before the Instance fails, when the component's
    lifecycle.instanceReadyTimeout is unset. None: no operator default (the chart sets 30m)."""
    status_encoding: StatusEncoding = "Rows"
    """ColumnarV2 stores per-Instance rows in instanceStatusColumns whenever that is smaller."""
    revision_history_limit: int = 10
    """Non-live ControllerRevisions kept per replica when spec.revisionHistoryLimit is unset."""
    serving_gate_controller: str = "ome-inferencereplica-controller"
    """Field manager (and event component) of the controller's writes."""
    max_concurrent_reconciles: int = 4
    migration_audit_configured: bool = True
    """Whether ome.controller.lifecycle.audit is set; migration requests wait without it."""
    drain_timeout: float = 600.0
    """Seconds a drain may take before DrainOverdue, when no instanceReadyTimeout applies."""

    def __post_init__(self) -> None:
        if self.instance_ready_timeout is not None and self.instance_ready_timeout <= 0:
            raise ValueError("instance_ready_timeout must be positive or None")
        if self.revision_history_limit < 1:
            raise ValueError("revision_history_limit must be >= 1")
        if self.max_concurrent_reconciles < 1:
            raise ValueError("max_concurrent_reconciles must be >= 1")
