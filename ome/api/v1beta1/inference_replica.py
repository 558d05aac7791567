"""InferenceReplica: one OMENative pod set, run as Instances (v1.3).

OME writes one per OMENative component of an InferenceService (with ``parentRef``); a user
can also create a standalone one that renders from ``modelRef``/``runtimeRef`` or ``runners``.
Per-Instance status is either the dense ``instanceStatuses`` list or the ColumnarV2
``instanceStatusColumns``.
"""

from __future__ import annotations

from typing import Any, Literal

from ome.api.v1beta1.autoscaler import ComponentAutoscaler
from ome.api.v1beta1.base import (
    AGE,
    ComponentType,
    CRDInfo,
    Int32,
    Int64,
    IntOrString,
    KubeObject,
    OMEModel,
    PodTemplateSpecDict,
    PrinterColumn,
    Rule,
    ScaleSubresource,
    Time,
    f,
)
from ome.api.v1beta1.common import Condition, ModelRef, ServingRuntimeRef
from ome.api.v1beta1.component import TopologySpreadPolicy
from ome.api.v1beta1.lifecycle import (
    InstanceOperation,
    InstanceTermination,
    LifecycleSpec,
    MigrationPhase,
    OMENativeInstancePhase,
    OMENativeInstanceStatus,
    RolloutHold,
)
from ome.api.v1beta1.placement import PlacementExecutionPolicy
from ome.api.v1beta1.rollout import PAIRING_PROTOCOL_PATTERN
from ome.api.v1beta1.rollout_status import ComponentTrafficTarget

RunnerName = Literal["default", "leader", "worker"]
PauseMode = Literal["Recover", "Freeze"]
InstanceStatusEncoding = Literal["ColumnarV2"]
RetryBlockState = Literal["Backoff", "Held", "RetryInProgress"]
MigrationTrigger = Literal["Manual", "Auto"]

# A canonical index set: "0-8,10-114,116".
INDEX_SET_PATTERN = r"^(0|[1-9][0-9]*)(-(0|[1-9][0-9]*))?(,(0|[1-9][0-9]*)(-(0|[1-9][0-9]*))?)*$"


def _index_set(alias: str, *, required: bool = False) -> Any:
    return f(alias, required=required, min_length=1, pattern=INDEX_SET_PATTERN)


class ParentReference(OMEModel):
    name: str = f("name", required=True)


class Runner(OMEModel):
    """One pod role of an Instance: ``default`` (size 1), or ``leader`` (1) and ``worker`` (>= 1)."""

    name: RunnerName = f("name", required=True)
    size: Int32 = f("size", required=True, minimum=1)
    template: PodTemplateSpecDict = f("template", required=True)


class InferenceReplicaPacing(OMEModel):
    partition: Int32 | None = f("partition", minimum=0)
    max_unavailable: IntOrString | None = f("maxUnavailable")
    rollback_to_revision: str | None = f("rollbackToRevision")


class InferenceReplicaSpec(OMEModel):
    placement_execution: PlacementExecutionPolicy | None = f("placementExecution")
    placement_replica_limit: Int32 | None = f("placementReplicaLimit", minimum=1)
    parent_ref: ParentReference | None = f("parentRef")
    component: ComponentType = f("component", required=True)
    replicas: Int32 | None = f("replicas")
    min_ready_seconds: Int32 | None = f("minReadySeconds", minimum=0)
    topology_key: str | None = f("topologyKey")
    topology_spread: TopologySpreadPolicy | None = f("topologySpread")
    topology_spread_key: str | None = f("topologySpreadKey")
    pairing_protocol: str | None = f("pairingProtocol", max_length=63, pattern=PAIRING_PROTOCOL_PATTERN)
    runners: list[Runner] | None = f("runners", min_items=1, list_type="map", list_map_keys=("name",))
    model_ref: ModelRef | None = f("modelRef")
    runtime_ref: ServingRuntimeRef | None = f("runtimeRef")
    lifecycle: LifecycleSpec | None = f("lifecycle")
    pacing: InferenceReplicaPacing | None = f("pacing")
    autoscaler: ComponentAutoscaler | None = f("autoscaler")
    paused: bool | None = f("paused")
    pause_mode: PauseMode | None = f("pauseMode")
    revision_history_limit: Int32 | None = f("revisionHistoryLimit", minimum=1)


# --- ColumnarV2 per-Instance status --------------------------------------------------------------


class InstanceStatusPhaseGroup(OMEModel):
    value: OMENativeInstancePhase = f("value", required=True)
    indexes: str = _index_set("indexes", required=True)


class InstanceStatusRevisionGroup(OMEModel):
    value: str = f("value", required=True, min_length=1)
    indexes: str = _index_set("indexes", required=True)


class InstanceStatusIncarnationGroup(OMEModel):
    crd_rules = (
        Rule("self.value != 0", "an incarnation group value must be nonzero; zero is the absent default"),
    )

    value: Int64 = f("value", required=True)
    indexes: str = _index_set("indexes", required=True)


class InstanceStatusCountGroup(OMEModel):
    value: Int32 = f("value", required=True, minimum=1)
    indexes: str = _index_set("indexes", required=True)


class InstanceStatusEntry(OMEModel):
    crd_rules = (
        Rule(
            "has(self.conditions) || has(self.readySince) || has(self.operation) || "
            "has(self.lastFailure) || has(self.announced)",
            "an entry must carry at least one of conditions, readySince, operation, lastFailure, or "
            "announced",
        ),
    )

    index: Int32 = f("index", required=True, minimum=0)
    conditions: list[Condition] | None = f(
        "conditions", min_items=1, list_type="map", list_map_keys=("type",)
    )
    ready_since: Time | None = f("readySince")
    operation: InstanceOperation | None = f("operation")
    last_failure: InstanceTermination | None = f("lastFailure")
    announced: list[str] | None = f("announced", min_items=1, list_type="set")


class InstanceStatusColumns(OMEModel):
    members: str = _index_set("members", required=True)
    row_order: list[Int32] | None = f("rowOrder", min_items=1, list_type="atomic", items={"minimum": 0})
    phases: list[InstanceStatusPhaseGroup] = f("phases", required=True, min_items=1, list_type="atomic")
    running_revisions: list[InstanceStatusRevisionGroup] | None = f(
        "runningRevisions", min_items=1, list_type="atomic"
    )
    target_revisions: list[InstanceStatusRevisionGroup] | None = f(
        "targetRevisions", min_items=1, list_type="atomic"
    )
    incarnations: list[InstanceStatusIncarnationGroup] | None = f(
        "incarnations", min_items=1, list_type="atomic"
    )
    pod_counts: list[InstanceStatusCountGroup] | None = f("podCounts", min_items=1, list_type="atomic")
    serving_pod_counts: list[InstanceStatusCountGroup] | None = f(
        "servingPodCounts", min_items=1, list_type="atomic"
    )
    available_pod_counts: list[InstanceStatusCountGroup] | None = f(
        "availablePodCounts", min_items=1, list_type="atomic"
    )
    admitted: str | None = _index_set("admitted")
    active_ordinal_one: str | None = _index_set("activeOrdinalOne")
    entries: list[InstanceStatusEntry] | None = f("entries", min_items=1, list_type="atomic")


# --- status -------------------------------------------------------------------------------------


class RetryBlock(OMEModel):
    target_revision: str = f("targetRevision", required=True)
    state: RetryBlockState = f("state", required=True)
    attempts_started: Int32 = f("attemptsStarted", required=True)
    next_retry_at: Time | None = f("nextRetryAt")
    first_failure_at: Time | None = f("firstFailureAt")
    last_failure_at: Time | None = f("lastFailureAt")
    reason: str | None = f("reason")


class MigrationStatus(OMEModel):
    request_uuid: str = f("requestUUID", required=True)
    trigger: MigrationTrigger = f("trigger", required=True)
    source_instance: Int32 = f("sourceInstance", required=True)
    surge_instance: Int32 | None = f("surgeInstance")
    allocated_at: Time | None = f("allocatedAt")
    from_node: str | None = f("fromNode")
    hint_target_nodes: list[str] | None = f("hintTargetNodes", list_type="atomic")
    phase: MigrationPhase = f("phase", required=True)
    attempt: Int32 | None = f("attempt")
    reason: str | None = f("reason")
    message: str | None = f("message")
    started_at: Time = f("startedAt", required=True)
    deadline: Time = f("deadline", required=True)
    completed_at: Time | None = f("completedAt")
    succeeded: bool | None = f("succeeded")


class InferenceReplicaStatus(OMEModel):
    crd_rules = (
        Rule(
            "has(self.instanceStatusEncoding) || !has(self.instanceStatusColumns)",
            "instanceStatusColumns requires instanceStatusEncoding; an unmarked status carries only "
            "instanceStatuses",
        ),
        Rule(
            "!has(self.instanceStatusEncoding) || (has(self.instanceStatusColumns) && "
            "!has(self.instanceStatuses))",
            "instanceStatusEncoding: ColumnarV2 requires instanceStatusColumns and forbids instanceStatuses",
        ),
    )

    observed_generation: Int64 | None = f("observedGeneration")
    placement_observed_generation: Int64 | None = f("placementObservedGeneration", minimum=1)
    replicas: Int32 | None = f("replicas")
    ready_replicas: Int32 | None = f("readyReplicas")
    serving_replicas: Int32 | None = f("servingReplicas")
    available_replicas: Int32 | None = f("availableReplicas")
    updated_replicas: Int32 | None = f("updatedReplicas")
    updated_ready_replicas: Int32 | None = f("updatedReadyReplicas")
    current_revision: str | None = f("currentRevision")
    update_revision: str | None = f("updateRevision")
    collision_count: Int32 | None = f("collisionCount")
    label_selector: str | None = f("labelSelector")
    instance_statuses: list[OMENativeInstanceStatus] | None = f(
        "instanceStatuses", list_type="map", list_map_keys=("index",)
    )
    instance_status_encoding: InstanceStatusEncoding | None = f("instanceStatusEncoding")
    instance_status_columns: InstanceStatusColumns | None = f("instanceStatusColumns")
    retry_blocks: list[RetryBlock] | None = f(
        "retryBlocks", list_type="map", list_map_keys=("targetRevision",)
    )
    migrations: list[MigrationStatus] | None = f(
        "migrations", list_type="map", list_map_keys=("requestUUID",)
    )
    conditions: list[Condition] | None = f("conditions", list_type="map", list_map_keys=("type",))
    traffic: list[ComponentTrafficTarget] | None = f(
        "traffic", list_type="map", list_map_keys=("revisionName",)
    )
    coordination_group_ref: str | None = f("coordinationGroupRef")
    rollout_hold: RolloutHold | None = f("rolloutHold")


class InferenceReplica(KubeObject):
    crd = CRDInfo(
        kind="InferenceReplica",
        plural="inferencereplicas",
        singular="inferencereplica",
        short_names=("irep",),
        printer_columns=(
            PrinterColumn("Component", "string", ".spec.component"),
            PrinterColumn("Desired", "integer", ".spec.replicas"),
            PrinterColumn("Current", "integer", ".status.replicas"),
            PrinterColumn("Ready", "integer", ".status.readyReplicas"),
            PrinterColumn("Available", "integer", ".status.availableReplicas"),
            AGE,
        ),
        scale=ScaleSubresource(".spec.replicas", ".status.replicas", ".status.labelSelector"),
    )

    spec: InferenceReplicaSpec | None = f("spec")
    status: InferenceReplicaStatus | None = f("status")
