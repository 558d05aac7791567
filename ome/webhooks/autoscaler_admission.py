"""Admission of the autoscaling and disruption-budget fields of an InferenceService (pure).

The documented rejections, first failing rule wins, component by component (engine, decoder, router):
`AutoscalerClassUnknown`, `KedaTriggersRequired`, `HPAMetricMalformed`, `KedaIdleBelowMin` (each as
`<component>: <Reason>: ...`), `InvalidScaleToZero`, `AutoscalerAnnotationConflict`,
`AutoscalerPolicyFeatureDisabled`, the legacy annotations' values, and the PodDisruptionBudget fields
(`spec.engine.minAvailable and spec.engine.maxUnavailable cannot both be set`, `... must be a
non-negative integer or a percentage from 0% to 100%`). `minReplicas ... must be <= maxReplicas` is
checked with the other bounds in inferenceservice_validation.py.

Whether AutoscalerPolicy is on is known only once the manager has looked at startup; `POLICY_GATE` holds
that answer for the webhook (off until told otherwise, as the feature is).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ome.config.pdb_config import budget_problem
from ome.resolution import autoscaling, modes

Obj = dict[str, Any]

CLASS_UNKNOWN: Final = "AutoscalerClassUnknown"
KEDA_TRIGGERS_REQUIRED: Final = "KedaTriggersRequired"
HPA_METRIC_MALFORMED: Final = "HPAMetricMalformed"
KEDA_IDLE_BELOW_MIN: Final = "KedaIdleBelowMin"
INVALID_SCALE_TO_ZERO: Final = "InvalidScaleToZero"
ANNOTATION_CONFLICT: Final = "AutoscalerAnnotationConflict"
POLICY_FEATURE_DISABLED: Final = "AutoscalerPolicyFeatureDisabled"
METRIC_FIELDS: Final = {
    "Resource": "resource",
    "Pods": "pods",
    "Object": "object",
    "External": "external",
    "ContainerResource": "containerResource",
}
LEGACY_METRICS: Final = ("cpu", "memory")


class PolicyGate:
    """Whether the AutoscalerPolicy feature was on when the manager started."""

    def __init__(self) -> None:
        self.enabled = False


POLICY_GATE: Final = PolicyGate()


def isvc_error(isvc: Mapping[str, Any], *, policy_enabled: bool | None = None) -> str | None:
    """The first documented rejection of the InferenceService's autoscaling, or None."""
    enabled = POLICY_GATE.enabled if policy_enabled is None else policy_enabled
    spec = isvc.get("spec") or {}
    annotations = (isvc.get("metadata") or {}).get("annotations") or {}
    if (error := legacy_annotation_error(annotations)) is not None:
        return error
    present = [c for c in modes.COMPONENTS if isinstance(spec.get(c), Mapping)]
    for component in present:
        block = spec[component]
        if (error := block_error(component, block.get("autoscaler"), block.get("minReplicas"))) is not None:
            return error
    if autoscaling.CLASS_ANNOTATION in annotations:
        with_block = next((c for c in present if spec[c].get("autoscaler")), None)
        if with_block is not None:
            return (
                f"{ANNOTATION_CONFLICT}: {autoscaling.CLASS_ANNOTATION} annotation is present together with "
                f"spec.{with_block}.autoscaler; remove the annotation — per-Component autoscaler block wins"
            )
    for component in present:
        if (error := _scale_to_zero_error(component, spec[component], annotations)) is not None:
            return error
        ref = autoscaling.policy_ref(spec[component])
        if ref is not None and not enabled:
            return (
                f"{POLICY_FEATURE_DISABLED}: spec.{component}.autoscalerPolicyRef names AutoscalerPolicy "
                f"{ref!r}, but the AutoscalerPolicy feature is not enabled"
            )
        if (error := budget_error(component, spec[component])) is not None:
            return error
    return None


def block_error(component: str, block: Any, min_replicas: Any) -> str | None:
    """One `autoscaler` block (from an InferenceService or a runtime), wrapped with `<component>: `."""
    if block is None:
        return None
    if not isinstance(block, Mapping):
        return f"{component}: {CLASS_UNKNOWN}: autoscaler must be an object"
    klass = block.get("class")
    if klass not in autoscaling.CLASSES:
        shown, allowed = klass or "", "|".join(autoscaling.CLASSES)
        return f"{component}: {CLASS_UNKNOWN}: autoscaler.class {shown!r} is not one of {allowed}"
    if klass == autoscaling.KEDA:
        keda = block.get("keda") or {}
        if not keda.get("triggers"):
            return f"{component}: {KEDA_TRIGGERS_REQUIRED}: class=keda requires at least 1 trigger"
        idle = keda.get("idleReplicaCount")
        if isinstance(idle, int) and isinstance(min_replicas, int) and idle >= min_replicas:
            return (
                f"{component}: {KEDA_IDLE_BELOW_MIN}: keda.idleReplicaCount must be < minReplicas "
                f"(got idleReplicaCount={idle}, minReplicas={min_replicas})"
            )
    if klass == autoscaling.HPA:
        for index, metric in enumerate((block.get("hpa") or {}).get("metrics") or []):
            if (error := _metric_error(index, metric)) is not None:
                return f"{component}: {error}"
    return None


def _metric_error(index: int, metric: Any) -> str | None:
    kind = metric.get("type") if isinstance(metric, Mapping) else None
    if not kind:
        return (f"{HPA_METRIC_MALFORMED}: hpa.metrics[{index}].type is empty; must be one of "
                "Resource|Pods|Object|External|ContainerResource")
    field = METRIC_FIELDS.get(str(kind))
    if field is None:
        return (f"{HPA_METRIC_MALFORMED}: hpa.metrics[{index}].type {kind!r} is not one of "
                "Resource|Pods|Object|External|ContainerResource")
    if not isinstance(metric, Mapping) or metric.get(field) is None:
        return (f"{HPA_METRIC_MALFORMED}: hpa.metrics[{index}].type={kind} but "
                f"hpa.metrics[{index}].{field} is nil")
    return None


def _scale_to_zero_error(
    component: str, block: Mapping[str, Any], annotations: Mapping[str, str]
) -> str | None:
    if block.get("minReplicas") != 0 or isinstance(block.get("minReplicas"), bool):
        return None
    if annotations.get(autoscaling.CLASS_ANNOTATION) == "keda":
        return None
    if (block.get("autoscaler") or {}).get("class") == autoscaling.KEDA:
        return None
    return (
        f"{INVALID_SCALE_TO_ZERO}: {component}.minReplicas=0 requires KEDA autoscaling (set "
        f"spec.{component}.autoscaler.class=KEDA or the {autoscaling.CLASS_ANNOTATION}=keda annotation); "
        "Serverless mode no longer auto-promotes scale-to-zero"
    )


def legacy_annotation_error(annotations: Mapping[str, str]) -> str | None:
    value = annotations.get(autoscaling.CLASS_ANNOTATION)
    if value is not None and value not in autoscaling.LEGACY_CLASSES:
        return f"[{value}] is not a supported autoscaler class type"
    target = annotations.get(autoscaling.TARGET_ANNOTATION)
    if target is not None and not (target.isdigit() and 1 <= int(target) <= 100):
        return "the target utilization percentage should be a [1-100] integer"
    metric = annotations.get(autoscaling.METRICS_ANNOTATION)
    if value == "hpa" and metric is not None and metric not in LEGACY_METRICS:
        return f"[{metric}] is not a supported metric"
    return None


def budget_error(component: str, block: Mapping[str, Any]) -> str | None:
    """A component's PodDisruptionBudget fields: one of the two, each a count or a percentage."""
    present = [key for key in ("minAvailable", "maxUnavailable") if block.get(key) is not None]
    if len(present) == 2:
        return f"spec.{component}.minAvailable and spec.{component}.maxUnavailable cannot both be set"
    for key in present:
        if budget_problem(block[key]) is not None:
            return f"spec.{component}.{key} must be a non-negative integer or a percentage from 0% to 100%"
    return None


def runtime_error(spec: Mapping[str, Any]) -> str | None:
    """A ServingRuntime's component configs: the same block checks, and no autoscalerPolicyRef."""
    for key in ("engineConfig", "decoderConfig", "routerConfig"):
        config = spec.get(key)
        if not isinstance(config, Mapping):
            continue
        if config.get("autoscalerPolicyRef") is not None:
            return f"{key}.autoscalerPolicyRef is not allowed: references go only in an InferenceService"
        if (error := block_error(key, config.get("autoscaler"), config.get("minReplicas"))) is not None:
            return error
    return None
