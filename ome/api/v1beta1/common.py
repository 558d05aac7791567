"""Types shared by several kinds: conditions, addresses, model/runtime references, accelerators."""

from __future__ import annotations

from typing import Literal

from ome.api.v1beta1.base import URL, Int64, OMEModel, StrMap, Time, f

# metav1.Condition field bounds, as the apimachinery type declares them.
_CONDITION_TYPE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
_CONDITION_REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"

ConditionStatus = Literal["True", "False", "Unknown"]


class Condition(OMEModel):
    """metav1.Condition, used by every status below except the InferenceService's."""

    type: str = f("type", required=True, max_length=316, pattern=_CONDITION_TYPE_PATTERN)
    status: ConditionStatus = f("status", required=True)
    observed_generation: Int64 | None = f("observedGeneration", minimum=0)
    last_transition_time: Time = f("lastTransitionTime", required=True)
    reason: str = f("reason", required=True, min_length=1, max_length=1024, pattern=_CONDITION_REASON_PATTERN)
    message: str = f("message", required=True, max_length=32768)


class KnativeCondition(OMEModel):
    """knative.dev/pkg apis.Condition, the condition shape of InferenceService status."""

    type: str = f("type", required=True)
    status: str = f("status", required=True)
    severity: str | None = f("severity")
    last_transition_time: str | None = f("lastTransitionTime")
    reason: str | None = f("reason")
    message: str | None = f("message")


class Addressable(OMEModel):
    """knative duck/v1 Addressable."""

    name: str | None = f("name")
    url: URL | None = f("url")
    ca_certs: str | None = f("CACerts")
    audience: str | None = f("audience")


class ModelOverlayRef(OMEModel):
    """A BaseModel mounted next to the primary model (since v1.3)."""

    name: str = f("name", required=True)
    kind: str | None = f("kind", crd_default="ClusterBaseModel")
    api_group: str | None = f("apiGroup", crd_default="ome.io")


class ModelRef(OMEModel):
    """spec.model of an InferenceService (and spec.modelRef of a standalone InferenceReplica)."""

    name: str = f("name", required=True)
    kind: str | None = f("kind", crd_default="ClusterBaseModel")
    api_group: str | None = f("apiGroup", crd_default="ome.io")
    fine_tuned_weights: list[str] | None = f("fineTunedWeights", list_type="atomic")
    overlays: list[ModelOverlayRef] | None = f("overlays", list_type="map", list_map_keys=("name",))


class ServingRuntimeRef(OMEModel):
    """spec.runtime of an InferenceService (and spec.runtimeRef of a standalone InferenceReplica)."""

    name: str = f("name", required=True)
    kind: str | None = f("kind", crd_default="ClusterServingRuntime")
    api_group: str | None = f("apiGroup", crd_default="ome.io")
    auto_sync: bool | None = f("autoSync", crd_default=True)
    revision: str | None = f("revision")


class AcceleratorConstraints(OMEModel):
    min_memory: Int64 | None = f("minMemory")
    max_memory: Int64 | None = f("maxMemory")
    min_compute_performance_tflops: Int64 | None = f("minComputePerformanceTFLOPS")
    min_architecture_version: str | None = f("minArchitectureVersion")
    required_features: list[str] | None = f("requiredFeatures", list_type="atomic")
    excluded_classes: list[str] | None = f("excludedClasses", list_type="atomic")
    architecture_families: list[str] | None = f("architectureFamilies", list_type="atomic")
    preferred_precisions: list[str] | None = f("preferredPrecisions", list_type="atomic")


AcceleratorSelectionPolicy = Literal["BestFit", "Cheapest", "MostCapable", "FirstAvailable"]


class AcceleratorSelector(OMEModel):
    accelerator_class: str | None = f("acceleratorClass")
    constraints: AcceleratorConstraints | None = f("constraints")
    policy: AcceleratorSelectionPolicy | None = f("policy")


class AcceleratorSelection(OMEModel):
    """status.components.<c>.selectedAccelerator."""

    accelerator_class: str = f("acceleratorClass", required=True)
    reason: str | None = f("reason")
    node_selector: StrMap | None = f("nodeSelector")
    resource_requests: StrMap | None = f("resourceRequests")


class ObjectReference(OMEModel):
    """ome.io's own name/namespace reference (FineTunedWeight.baseModelRef, trainingJobRef)."""

    name: str = f("name", required=True)
    namespace: str | None = f("namespace")


class MetricProviderRef(OMEModel):
    """A logical metric provider, bound to an endpoint by the operator's configuration."""

    name: str = f("name", required=True, min_length=1)


class ScaleTargetRef(OMEModel):
    api_version: str | None = f("apiVersion")
    kind: str | None = f("kind")
    name: str | None = f("name")
