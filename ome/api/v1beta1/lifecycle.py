"""OMENative lifecycle: the per-component policy block, its status, and per-Instance rows (v1.3)."""

from __future__ import annotations

from typing import Literal

from ome.api.v1beta1.base import (
    ComponentType,
    Duration,
    Int32,
    Int64,
    IntOrString,
    OMEModel,
    Time,
    f,
)
from ome.api.v1beta1.common import Condition

InstanceRestartPolicy = Literal["None", "RecreateInstanceOnPodRestart"]
InstanceReadyPolicy = Literal["AllPodReady", "None"]
UpdateStrategyType = Literal["SurgeThenDrain", "RecreatePod", "InPlaceIfPossible", "InPlaceOnly"]
MigrationPolicyMode = Literal["Auto", "Surge", "Never"]
RolloutHoldGate = Literal["Pairing", "Ratio", "Sequential", "Budget", "RetryBlock", "Held", "Plan"]
OMENativeInstancePhase = Literal[
    "Pending", "Creating", "Ready", "Updating", "Restarting", "Migrating", "Failed", "Deleting"
]
InstanceOperationType = Literal["Create", "Update", "Restart", "Migrate", "Delete"]
MigrationMode = Literal["Surge"]
MigrationPhase = Literal[
    "Accepted",
    "SurgePending",
    "SurgeReady",
    "Draining",
    "Completed",
    "Failed",
    "Relocated",
    "Pending",
    "InProgress",
]


# --- spec -----------------------------------------------------------------------------------


class RollingUpdate(OMEModel):
    partition: Int32 | None = f("partition", minimum=0)
    max_unavailable: IntOrString | None = f("maxUnavailable")
    max_surge: IntOrString | None = f("maxSurge")


class InPlaceUpdateStrategy(OMEModel):
    grace_period_seconds: Int32 | None = f("gracePeriodSeconds", minimum=0)
    mark_not_ready_during_lifecycle: bool | None = f("markNotReadyDuringLifecycle")


class UpdateStrategy(OMEModel):
    type: UpdateStrategyType | None = f("type")
    rolling_update: RollingUpdate | None = f("rollingUpdate")
    in_place_update_strategy: InPlaceUpdateStrategy | None = f("inPlaceUpdateStrategy")


class MigrationPolicy(OMEModel):
    mode: MigrationPolicyMode | None = f("mode")


class LifecycleSpec(OMEModel):
    """spec.<component>.lifecycle: OMENative policies, ignored on other deployment modes."""

    restart_policy: InstanceRestartPolicy | None = f("restartPolicy")
    update_strategy: UpdateStrategy | None = f("updateStrategy")
    ready_policy: InstanceReadyPolicy | None = f("readyPolicy")
    instance_ready_timeout: Duration | None = f("instanceReadyTimeout")
    min_ready_seconds: Int32 | None = f("minReadySeconds", minimum=0)
    migration_policy: MigrationPolicy | None = f("migrationPolicy")


# --- status ---------------------------------------------------------------------------------


class RolloutHold(OMEModel):
    """The gate that last held a component's rollout, why, and since when."""

    gate: RolloutHoldGate = f("gate", required=True)
    reason: str = f("reason", required=True)
    target: str | None = f("target")
    since: Time = f("since", required=True)


class LifecycleStatus(OMEModel):
    """status.components.<c>.lifecycle: Instance counts and revisions of an OMENative component."""

    observed_generation: Int64 | None = f("observedGeneration")
    current_revision: str | None = f("currentRevision")
    update_revision: str | None = f("updateRevision")
    collision_count: Int32 | None = f("collisionCount")
    label_selector: str | None = f("labelSelector")
    replicas: Int32 | None = f("replicas")
    ready_replicas: Int32 | None = f("readyReplicas")
    serving_replicas: Int32 | None = f("servingReplicas")
    available_replicas: Int32 | None = f("availableReplicas")
    updated_replicas: Int32 | None = f("updatedReplicas")
    updated_ready_replicas: Int32 | None = f("updatedReadyReplicas")
    conditions: list[Condition] | None = f("conditions", list_type="map", list_map_keys=("type",))
    rollout_hold: RolloutHold | None = f("rolloutHold")


class InstanceTermination(OMEModel):
    pod_name: str = f("podName", required=True)
    container_name: str | None = f("containerName")
    reason: str | None = f("reason")
    exit_code: Int32 | None = f("exitCode")
    message: str | None = f("message")
    time: Time | None = f("time")


class InstanceOperation(OMEModel):
    """The recovery anchor written before a destructive action on an Instance."""

    id: str = f("id", required=True)
    type: InstanceOperationType = f("type", required=True)
    step: str = f("step", required=True)
    started_at: Time = f("startedAt", required=True)
    last_progress_at: Time = f("lastProgressAt", required=True)
    deadline: Time | None = f("deadline", nullable=True)
    retry_count: Int32 | None = f("retryCount")
    target_revision: str | None = f("targetRevision")
    reason: str | None = f("reason")
    waiting: str | None = f("waiting")
    capacity_refused_at: Time | None = f("capacityRefusedAt")
    strategy: str | None = f("strategy")
    surge_index: Int32 | None = f("surgeIndex")
    from_node: str | None = f("fromNode")
    hint_target_nodes: list[str] | None = f("hintTargetNodes", list_type="atomic")
    request_uuid: str | None = f("requestUUID")


class OMENativeInstanceStatus(OMEModel):
    """One row of InferenceReplica status.instanceStatuses (the DenseV1 encoding)."""

    index: Int32 = f("index", required=True)
    incarnation: Int64 | None = f("incarnation")
    phase: OMENativeInstancePhase = f("phase", required=True)
    running_revision: str | None = f("runningRevision")
    target_revision: str | None = f("targetRevision")
    pod_count: Int32 | None = f("podCount")
    ready_pod_count: Int32 | None = f("readyPodCount")
    serving_pod_count: Int32 | None = f("servingPodCount")
    available_pod_count: Int32 | None = f("availablePodCount")
    scheduled_pod_count: Int32 | None = f("scheduledPodCount")
    admitted: bool | None = f("admitted")
    nodes_occupied: list[str] | None = f("nodesOccupied", list_type="set")
    conditions: list[Condition] | None = f("conditions", list_type="map", list_map_keys=("type",))
    ready_since: Time | None = f("readySince")
    operation: InstanceOperation | None = f("operation")
    active_ordinal: Int32 | None = f("activeOrdinal", minimum=0, maximum=1)
    last_failure: InstanceTermination | None = f("lastFailure")
    announced: list[str] | None = f("announced", list_type="set")


class MigrationEvent(OMEModel):
    at: Time = f("at", required=True)
    message: str = f("message", required=True)


class MigrationHistoryEntry(OMEModel):
    """One entry of InferenceService status.migrationHistory."""

    id: str = f("id", required=True)
    component: ComponentType = f("component", required=True)
    instance: Int32 = f("instance", required=True)
    replacement_instance: Int32 | None = f("replacementInstance")
    mode: MigrationMode = f("mode", required=True)
    phase: MigrationPhase = f("phase", required=True)
    requested_at: Time = f("requestedAt", required=True)
    started_at: Time | None = f("startedAt")
    completed_at: Time | None = f("completedAt")
    reason: str | None = f("reason")
    requested_by: str | None = f("requestedBy")
    events: list[MigrationEvent] | None = f("events", list_type="atomic")
    outcome_reason: str | None = f("outcomeReason")
