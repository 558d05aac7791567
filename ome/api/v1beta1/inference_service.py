"""InferenceService: serves a model with an engine, and optionally a decoder and a router."""

from __future__ import annotations

from typing import Literal

from ome.api.v1beta1.autoscaler import ComponentAutoscalerStatus, ScalingPolicy
from ome.api.v1beta1.base import (
    AGE,
    URL,
    CRDInfo,
    Int32,
    Int64,
    KubeObject,
    OMEModel,
    PrinterColumn,
    Rule,
    StrMap,
    Time,
    f,
)
from ome.api.v1beta1.common import (
    AcceleratorSelection,
    AcceleratorSelector,
    Addressable,
    KnativeCondition,
    ModelRef,
    ScaleTargetRef,
    ServingRuntimeRef,
)
from ome.api.v1beta1.component import DecoderSpec, EngineSpec, RouterSpec
from ome.api.v1beta1.lifecycle import LifecycleStatus, MigrationHistoryEntry
from ome.api.v1beta1.placement import PlacementSpec, PlacementStatus, RoutingSpec
from ome.api.v1beta1.rollout import RolloutSpec
from ome.api.v1beta1.rollout_status import (
    CanaryStatus,
    ComponentTrafficTarget,
    RolloutCoordinationStatus,
    RolloutPhase,
    RolloutStatus,
)
from ome.api.v1beta1.traffic import TrafficSpec, TrafficStatus

DeploymentMode = Literal["OMENative", "RawDeployment"]
TransitionStatus = Literal["", "UpToDate", "InProgress", "BlockedByFailedLoad", "InvalidSpec"]
ModelState = Literal["", "Pending", "Standby", "Loading", "Loaded", "FailedToLoad"]
FailureReason = Literal[
    "BaseModelNotReady",
    "BaseModelNotFound",
    "ModelLoadFailed",
    "RuntimeUnhealthy",
    "RuntimeDisabled",
    "NoSupportingRuntime",
    "RuntimeNotRecognized",
]

# The deployment-mode annotation a component (or the runtime's component config) may carry.
DEPLOYMENT_MODE_ANNOTATION = "ome.io/deploymentMode"


class ReplicaRefs(OMEModel):
    """spec.replicaRefs: the standalone InferenceReplicas the service fronts, per role."""

    engine: list[str] | None = f("engine", list_type="atomic")
    decoder: list[str] | None = f("decoder", list_type="atomic")
    router: list[str] | None = f("router", list_type="atomic")


class InferenceServiceSpec(OMEModel):
    crd_rules = (
        Rule(
            "!has(oldSelf.placement) || !has(oldSelf.placement.policy) || "
            "oldSelf.placement.policy != 'ClusterAffinity' || (has(self.placement) && "
            "has(self.placement.policy) && self.placement.policy == 'ClusterAffinity')",
            "ClusterAffinity placement policy cannot be removed; drain and recreate the service to "
            "change placement ownership",
        ),
        Rule(
            "!(has(self.routing) && has(self.routing.capacityFactors) && has(self.placement) && "
            "has(self.placement.capacityFactors))",
            "spec.routing.capacityFactors and deprecated spec.placement.capacityFactors must not both be set",
        ),
    )

    deployment_mode: DeploymentMode | None = f("deploymentMode")
    engine: EngineSpec | None = f("engine")
    decoder: DecoderSpec | None = f("decoder")
    model: ModelRef | None = f("model")
    runtime: ServingRuntimeRef | None = f("runtime")
    router: RouterSpec | None = f("router")
    accelerator_selector: AcceleratorSelector | None = f("acceleratorSelector")
    traffic: TrafficSpec | None = f("traffic")
    rollout: RolloutSpec | None = f("rollout")
    scaling_policy: ScalingPolicy | None = f("scalingPolicy")
    placement: PlacementSpec | None = f("placement")
    routing: RoutingSpec | None = f("routing")
    replica_refs: ReplicaRefs | None = f("replicaRefs")
    ttl_seconds_after_creation: Int64 | None = f("ttlSecondsAfterCreation", minimum=1)

    def component(self, name: str) -> EngineSpec | DecoderSpec | RouterSpec | None:
        if name == "engine":
            return self.engine
        if name == "decoder":
            return self.decoder
        if name == "router":
            return self.router
        raise ValueError(f"unknown component {name!r}")


# --- status -----------------------------------------------------------------------------------


class ModelRevisionStates(OMEModel):
    active_model_state: ModelState = f("activeModelState", required=True, crd_default="Pending")
    target_model_state: ModelState | None = f("targetModelState", crd_default="")


class FailureInfo(OMEModel):
    location: str | None = f("location")
    reason: FailureReason | None = f("reason")
    message: str | None = f("message")
    model_revision_name: str | None = f("modelRevisionName")
    time: Time | None = f("time")
    exit_code: Int32 | None = f("exitCode")


class ModelCopies(OMEModel):
    failed_copies: int = f("failedCopies", required=True, crd_default=0)
    total_copies: int | None = f("totalCopies")


class ModelStatus(OMEModel):
    transition_status: TransitionStatus | None = f("transitionStatus")
    model_revision_states: ModelRevisionStates | None = f("modelRevisionStates")
    last_failure_info: FailureInfo | None = f("lastFailureInfo")
    model_copies: ModelCopies | None = f("modelCopies")


class MountedOverlay(OMEModel):
    name: str = f("name", required=True)
    env_var: str = f("envVar", required=True)
    mount_path: str | None = f("mountPath")
    distribution: str = f("distribution", required=True)


class ComponentStatusSpec(OMEModel):
    """status.components.<component>."""

    url: URL | None = f("url")
    rest_url: URL | None = f("restURL")
    address: Addressable | None = f("address")
    selected_accelerator: AcceleratorSelection | None = f("selectedAccelerator")
    lifecycle: LifecycleStatus | None = f("lifecycle")
    rollout_phase: RolloutPhase | None = f("rolloutPhase")
    latest_ready_revision: str | None = f("latestReadyRevision")
    latest_rolledout_revision: str | None = f("latestRolledoutRevision")
    previous_rolledout_revision: str | None = f("previousRolledoutRevision")
    traffic: list[ComponentTrafficTarget] | None = f(
        "traffic", list_type="map", list_map_keys=("revisionName",)
    )
    canary: CanaryStatus | None = f("canary")
    autoscaler: ComponentAutoscalerStatus | None = f("autoscaler")
    scale_target_ref: ScaleTargetRef | None = f("scaleTargetRef")


class InferenceServiceStatus(OMEModel):
    # knative duck/v1 Status, inlined
    observed_generation: Int64 | None = f("observedGeneration")
    conditions: list[KnativeCondition] | None = f("conditions")
    annotations: StrMap | None = f("annotations")

    address: Addressable | None = f("address")
    url: URL | None = f("url")
    addresses: list[Addressable] | None = f("addresses", list_type="atomic")
    components: dict[str, ComponentStatusSpec] | None = f("components")
    model_status: ModelStatus | None = f("modelStatus")
    migration_history: list[MigrationHistoryEntry] | None = f("migrationHistory", list_type="atomic")
    mounted_overlays: list[MountedOverlay] | None = f(
        "mountedOverlays", list_type="map", list_map_keys=("name",)
    )
    traffic: TrafficStatus | None = f("traffic")
    canary: CanaryStatus | None = f("canary")
    placement: PlacementStatus | None = f("placement")
    pinned_revision_name: str | None = f("pinnedRevisionName")
    last_runtime_sync_token: str | None = f("lastRuntimeSyncToken")
    rollout: RolloutStatus | None = f("rollout")
    rollout_coordination: RolloutCoordinationStatus | None = f("rolloutCoordination")

    def condition(self, type_: str) -> KnativeCondition | None:
        for cond in self.conditions or []:
            if cond.type == type_:
                return cond
        return None


class InferenceService(KubeObject):
    crd = CRDInfo(
        kind="InferenceService",
        plural="inferenceservices",
        singular="inferenceservice",
        short_names=("isvc",),
        printer_columns=(
            PrinterColumn("URL", "string", ".status.url"),
            PrinterColumn("Ready", "string", ".status.conditions[?(@.type=='Ready')].status"),
            PrinterColumn("BaseModel", "string", ".spec.model.name"),
            PrinterColumn("Runtime", "string", ".spec.runtime.name"),
            PrinterColumn("Placement", "string", ".status.placement.phase", priority=1),
            PrinterColumn(
                "Plan-Source", "string", ".status.rollout.activeRun.plan.groups[0].source", priority=1
            ),
            PrinterColumn(
                "Plan-Drift",
                "string",
                ".status.conditions[?(@.type=='RolloutPlanDrift')].status",
                priority=1,
            ),
            AGE,
        ),
        preserve_status=True,
    )

    spec: InferenceServiceSpec | None = f("spec")
    status: InferenceServiceStatus | None = f("status")
