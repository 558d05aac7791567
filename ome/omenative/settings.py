"""Operator-level settings the InferenceReplica controller reads (wired from inferenceservice-config)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

StatusEncoding = Literal["ColumnarV2", "Rows"]


@dataclass(frozen=True, kw_only=True, slots=True)
class InferenceReplicaSettings:
    instance_ready_timeout: float | None = 1800.0
    """Seconds an Instance operation may run before the Instance fails, when the component's
    lifecycle.instanceReadyTimeout is unset. None: no operator default (the chart sets 30m)."""
    status_encoding: StatusEncoding = "Rows"
    """ColumnarV2 stores per-Instance rows in instanceStatusColumns whenever that is smaller."""
    max_decoded_instances: int | None = 20000
    """omenativeStatus.maxDecodedInstances: the most rows decoded from (and written as) ColumnarV2; None:
    no bound, so a ColumnarV2 replica is not decoded (InstanceStatusDecodeFailed, cardinality_limit)."""
    revision_history_limit: int | None = None
    """Non-live ControllerRevisions kept per replica when spec.revisionHistoryLimit is unset (None:
    every revision, as when neither the chart's setting nor the annotation is set)."""
    serving_gate_controller: str = "ome-inferencereplica-controller"
    """Field manager (and event component) of the controller's writes."""
    max_concurrent_reconciles: int = 4
    migration_audit_configured: bool = True
    """Whether ome.controller.lifecycle.audit is set; migration requests wait without it."""
    drain_timeout: float = 600.0
    """Seconds a drain may take before DrainOverdue, when no instanceReadyTimeout applies."""
    teardown_deadline: float | None = 1800.0
    """lifecycle.teardown.deadline: seconds after its deletion that a replica's finalizer comes off even
    with pods left (the chart's 30m). None: hold until every owned pod is gone."""
    retry_initial_delay: float = 60.0
    """updateRetry.initialDelay: seconds before the second attempt of a failed Create."""
    retry_multiplier: float = 2.0
    """updateRetry.multiplier: each later attempt waits this much longer than the one before."""
    retry_max_delay: float = 1800.0
    """updateRetry.maxDelay: the longest wait between attempts."""
    pod_monitor_served: bool = False
    """Whether the monitoring.coreos.com PodMonitor CRD was served when the manager started."""
    pod_monitor_labels: Mapping[str, str] = field(default_factory=dict)
    """ome.podMonitor.labels: extra labels on each PodMonitor (what a Prometheus selects by)."""
    pod_monitor_relabelings: tuple[Mapping[str, Any], ...] = ()
    """ome.podMonitor.relabelings, appended to each endpoint's relabelings."""
    pod_monitor_metric_relabelings: tuple[Mapping[str, Any], ...] = ()
    """ome.podMonitor.metricRelabelings, appended to each endpoint's metricRelabelings."""
    scale_up_pod_batch_size: int | None = None
    """lifecycle.scaleUpPodBatchSize: missing pods created per pass over a component (whole Instances);
    None: unbounded, as when the key is absent."""
    scale_down_pod_batch_size: int | None = None
    """lifecycle.scaleDownPodBatchSize: pod-equivalent cost drained and deleted at once per component
    (whole Instances, `ome.omenative.scale_down_batching`); None: unbounded, as when the key is absent."""
    gang_schedule_timeout: tuple[float, float] | None = None
    """lifecycle.gangScheduleTimeout as (min, max) seconds: the bounds of a PodGroup's scheduleTimeoutSeconds
    (`ome.omenative.gang_timeout`); None: unset, the ready timeout as it is."""
    scale_down_requeue_interval: float | None = None
    """lifecycle.scaleDownRequeueInterval in seconds: the fallback check while scale-down work remains;
    None: no periodic check (events and deadlines still wake the controller)."""
    stuck_pod_grace_period: float | None = None
    """lifecycle.stuckPodGracePeriod in seconds: a pod of a creating or restarting Instance wedged in a
    terminal waiting reason and older than this fails the Instance. None: off (the chart sets 60s)."""
    unschedulable_grace_period: float | None = None
    """lifecycle.unschedulableGracePeriod in seconds: a pod of a creating or restarting Instance
    unschedulable this long fails the Instance. None: off (the chart sets 15m)."""

    def __post_init__(self) -> None:
        if self.instance_ready_timeout is not None and self.instance_ready_timeout <= 0:
            raise ValueError("instance_ready_timeout must be positive or None")
        if self.revision_history_limit is not None and self.revision_history_limit < 1:
            raise ValueError("revision_history_limit must be >= 1")
        if self.teardown_deadline is not None and self.teardown_deadline <= 0:
            raise ValueError("teardown_deadline must be positive or None")
        for grace in (self.stuck_pod_grace_period, self.unschedulable_grace_period):
            if grace is not None and grace <= 0:
                raise ValueError("the stuck-pod and unschedulable grace periods must be positive or None")
        if self.retry_initial_delay <= 0 or self.retry_multiplier < 1 or self.retry_max_delay <= 0:
            raise ValueError("retry delays must be positive and the multiplier >= 1")
        if self.max_concurrent_reconciles < 1:
            raise ValueError("max_concurrent_reconciles must be >= 1")
