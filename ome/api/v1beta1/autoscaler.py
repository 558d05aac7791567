"""Per-component autoscaling (spec.<component>.autoscaler) and scaling policy (alpha, v1.3).

The KEDA types mirror the fields of keda.sh/v1alpha1 that OME passes through verbatim.
"""

from __future__ import annotations

from typing import Literal

from ome.api.v1beta1.base import (
    ComponentType,
    HPABehaviorDict,
    Int32,
    Int64,
    MetricSpecDict,
    OMEModel,
    Quantity,
    StrMap,
    Time,
    f,
)
from ome.api.v1beta1.common import Condition

AutoscalerClass = Literal["HPA", "KEDA", "External", "None"]
AutoscalerManagedBy = Literal["ome", "external", "none"]
MetricTargetType = Literal["AverageValue", "Value", "Utilization"]


# --- KEDA pass-through types ----------------------------------------------------------------


class KedaAuthenticationRef(OMEModel):
    name: str = f("name", required=True)
    kind: str | None = f("kind")


class KedaScaleTrigger(OMEModel):
    """keda ScaleTriggers."""

    type: str = f("type", required=True)
    name: str | None = f("name")
    use_cached_metrics: bool | None = f("useCachedMetrics")
    metadata: StrMap = f("metadata", required=True)
    authentication_ref: KedaAuthenticationRef | None = f("authenticationRef")
    metric_type: str | None = f("metricType")


class KedaHPAConfig(OMEModel):
    name: str | None = f("name")
    behavior: HPABehaviorDict | None = f("behavior")


class KedaScalingModifiers(OMEModel):
    formula: str | None = f("formula")
    target: str | None = f("target")
    activation_target: str | None = f("activationTarget")
    metric_type: str | None = f("metricType")


class KedaAdvancedConfig(OMEModel):
    """keda AdvancedConfig."""

    horizontal_pod_autoscaler_config: KedaHPAConfig | None = f("horizontalPodAutoscalerConfig")
    restore_to_original_replica_count: bool | None = f("restoreToOriginalReplicaCount")
    scaling_modifiers: KedaScalingModifiers | None = f("scalingModifiers")


class KedaFallback(OMEModel):
    """keda Fallback."""

    failure_threshold: Int32 = f("failureThreshold", required=True)
    replicas: Int32 = f("replicas", required=True)
    behavior: (
        Literal["static", "currentReplicas", "currentReplicasIfHigher", "currentReplicasIfLower"] | None
    ) = f("behavior", crd_default="static")


# --- ComponentAutoscaler --------------------------------------------------------------------


class KedaAutoscaler(OMEModel):
    triggers: list[KedaScaleTrigger] = f("triggers", required=True, min_items=1, list_type="atomic")
    advanced: KedaAdvancedConfig | None = f("advanced")
    polling_interval: Int32 | None = f("pollingInterval")
    cooldown_period: Int32 | None = f("cooldownPeriod")
    idle_replica_count: Int32 | None = f("idleReplicaCount")
    fallback: KedaFallback | None = f("fallback")


class HPAAutoscaler(OMEModel):
    metrics: list[MetricSpecDict] | None = f("metrics", list_type="atomic")
    behavior: HPABehaviorDict | None = f("behavior")


class ComponentAutoscaler(OMEModel):
    class_: AutoscalerClass = f("class", required=True)
    keda: KedaAutoscaler | None = f("keda")
    hpa: HPAAutoscaler | None = f("hpa")


class AutoscalerPolicyRef(OMEModel):
    name: str = f("name", required=True, min_length=1)
    kind: Literal["AutoscalerPolicy", "ClusterAutoscalerPolicy"] | None = f(
        "kind", crd_default="AutoscalerPolicy"
    )


# --- scaling policy ------------------------------------------------------------------------

ScalingMode = Literal["Independent", "Proportional", "Pinned"]


class ProportionalPolicy(OMEModel):
    anchor: ComponentType = f("anchor", required=True, crd_default="engine")
    ratios: dict[str, Quantity] | None = f("ratios")


class ScalingPolicy(OMEModel):
    mode: ScalingMode = f("mode", required=True, crd_default="Independent")
    proportional: ProportionalPolicy | None = f("proportional")


# --- status ---------------------------------------------------------------------------------


class AutoscalerPolicyProvenance(OMEModel):
    name: str = f("name", required=True)
    observed_generation: Int64 | None = f("observedGeneration")
    portable_digest: str | None = f("portableDigest")
    resolved_digest: str | None = f("resolvedDigest")


class ShadowedAutoscalerPolicy(OMEModel):
    name: str = f("name", required=True)
    portable_digest: str | None = f("portableDigest")
    would_render_digest: str | None = f("wouldRenderDigest")


class ComponentAutoscalerStatus(OMEModel):
    """status.components.<c>.autoscaler."""

    class_: AutoscalerClass | None = f("class")
    managed_by: AutoscalerManagedBy | None = f("managedBy")
    spec_source: str | None = f("specSource")
    policy: AutoscalerPolicyProvenance | None = f("policy")
    shadowed_policy_ref: ShadowedAutoscalerPolicy | None = f("shadowedPolicyRef")
    current_replicas: Int32 | None = f("currentReplicas")
    desired_replicas: Int32 | None = f("desiredReplicas")
    last_scale_time: Time | None = f("lastScaleTime")
    conditions: list[Condition] | None = f("conditions", list_type="map", list_map_keys=("type",))
