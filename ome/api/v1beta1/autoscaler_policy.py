"""AutoscalerPolicy: a reusable, parameterized autoscaler template (alpha, off by default, v1.3)."""

from __future__ import annotations

from typing import Literal

from ome.api.v1beta1.autoscaler import HPAAutoscaler, KedaAdvancedConfig
from ome.api.v1beta1.base import (
    AGE,
    CRDInfo,
    Int32,
    Int64,
    KubeObject,
    OMEModel,
    PrinterColumn,
    Rule,
    StrMap,
    f,
)
from ome.api.v1beta1.common import Condition, MetricProviderRef

PolicyEnforcement = Literal["Default", "Required"]
ComponentBoundsField = Literal["MaxReplicas", "MinReplicas"]


class ReplicaValueSource(OMEModel):
    crd_rules = (
        Rule(
            "(has(self.value) ? 1 : 0) + (has(self.fromComponent) ? 1 : 0) == 1",
            "exactly one of value or fromComponent must be set",
        ),
    )

    value: Int32 | None = f("value", minimum=0)
    from_component: ComponentBoundsField | None = f("fromComponent")


class FallbackTemplate(OMEModel):
    failure_threshold: Int32 = f("failureThreshold", required=True, minimum=1)
    replicas: ReplicaValueSource = f("replicas", required=True)


class KedaTriggerTemplate(OMEModel):
    type: str = f("type", required=True, min_length=1)
    provider_ref: MetricProviderRef | None = f("providerRef")
    metric_type: Literal["AverageValue", "Value"] | None = f("metricType")
    query_returns_desired_replicas: bool | None = f("queryReturnsDesiredReplicas")
    metadata: StrMap = f("metadata", required=True)


class KedaPolicyTemplate(OMEModel):
    triggers: list[KedaTriggerTemplate] = f("triggers", required=True, min_items=1, list_type="atomic")
    advanced: KedaAdvancedConfig | None = f("advanced")
    polling_interval: Int32 | None = f("pollingInterval")
    cooldown_period: Int32 | None = f("cooldownPeriod")
    idle_replica_count: Int32 | None = f("idleReplicaCount")
    fallback: FallbackTemplate | None = f("fallback")


class AutoscalerPolicySpec(OMEModel):
    crd_rules = (
        Rule(
            "self.class == 'KEDA' ? (has(self.keda) && !has(self.hpa)) : !has(self.keda)",
            "class KEDA requires keda and forbids hpa; class HPA forbids keda",
        ),
    )

    enforcement: PolicyEnforcement | None = f("enforcement", crd_default="Default")
    class_: Literal["HPA", "KEDA"] = f("class", required=True)
    keda: KedaPolicyTemplate | None = f("keda")
    hpa: HPAAutoscaler | None = f("hpa")


class AutoscalerPolicyStatus(OMEModel):
    observed_generation: Int64 | None = f("observedGeneration")
    portable_digest: str | None = f("portableDigest")
    attached_components: Int32 | None = f("attachedComponents")
    conditions: list[Condition] | None = f("conditions", list_type="map", list_map_keys=("type",))


class AutoscalerPolicy(KubeObject):
    crd = CRDInfo(
        kind="AutoscalerPolicy",
        plural="autoscalerpolicies",
        singular="autoscalerpolicy",
        printer_columns=(
            PrinterColumn("Class", "string", ".spec.class"),
            PrinterColumn("Ready", "string", ".status.conditions[?(@.type=='Ready')].status"),
            PrinterColumn("Attached", "integer", ".status.attachedComponents"),
            AGE,
        ),
    )

    spec: AutoscalerPolicySpec | None = f("spec")
    status: AutoscalerPolicyStatus | None = f("status")
