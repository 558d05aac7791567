"""Which autoscaling applies to a component, and its replica bounds (pure; component-autoscaling page).

The autoscaler block comes whole from the first place that has one (`specSource` in status):

1. `isvc`: the component's `autoscaler` in the InferenceService (outranks a policy reference, which is then
   reported as shadowed with `AutoscalerResolved` True `InlinePrecedence`);
2. `policy`: the AutoscalerPolicy the component's `autoscalerPolicyRef` names. A reference that cannot be
   used holds the component (fail-closed: `PolicyNotFound`, `PolicyInvalid`, `ClassUnavailable`) instead of
   falling through; the caller keeps the last-known-good scaler;
3. `runtime`: the `autoscaler` in the runtime's engineConfig/decoderConfig/routerConfig;
4. `legacy`: on RawDeployment only, `ome.io/autoscalerClass` (`hpa`, `keda`, `external`) and
   `ome.io/targetUtilizationPercentage` (alone it selects `hpa`); a component's annotation wins over the
   InferenceService's;
5. `default`: `class: HPA` at 80% average CPU utilization.

Bounds are per field instead: InferenceService, runtime, then the config's replica defaults (a default max
below min is raised to min). A min above an explicitly set max is raised on OMENative and an error on
RawDeployment (`minReplicas must not exceed maxReplicas`). MultiNode gets no autoscaler.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ome.config.inferenceservice_config import ReplicasDefaults
from ome.resolution import modes

Obj = dict[str, Any]

HPA: Final = "HPA"
KEDA: Final = "KEDA"
EXTERNAL: Final = "External"
NONE: Final = "None"
CLASSES: Final = (HPA, KEDA, EXTERNAL, NONE)
MANAGED_BY: Final = {HPA: "ome", KEDA: "ome", EXTERNAL: "external", NONE: "none"}

SOURCE_ISVC: Final = "isvc"
SOURCE_POLICY: Final = "policy"
SOURCE_RUNTIME: Final = "runtime"
SOURCE_LEGACY: Final = "legacy"
SOURCE_DEFAULT: Final = "default"

CLASS_ANNOTATION: Final = "ome.io/autoscalerClass"
TARGET_ANNOTATION: Final = "ome.io/targetUtilizationPercentage"
METRICS_ANNOTATION: Final = "ome.io/metrics"
LEGACY_CLASSES: Final = {"hpa": HPA, "keda": KEDA, "external": EXTERNAL}
DEFAULT_CPU_UTILIZATION: Final = 80

RESOLVED_CONDITION: Final = "AutoscalerResolved"
RENDERED_FROM_POLICY: Final = "RenderedFromPolicy"
INLINE_PRECEDENCE: Final = "InlinePrecedence"
UNSUPPORTED_MODE: Final = "UnsupportedDeploymentMode"
POLICY_NOT_FOUND: Final = "PolicyNotFound"
POLICY_INVALID: Final = "PolicyInvalid"
CLASS_UNAVAILABLE: Final = "ClassUnavailable"
HOLD_PREFIX: Final = "holding last-known-good scaler: "


class AutoscalingError(Exception):
    """The component's autoscaling cannot be built: logged as `Failed to reconcile component`, retried."""


@dataclass(frozen=True, slots=True)
class Bounds:
    min: int
    max: int


@dataclass(frozen=True, slots=True)
class PolicyRendered:
    """The referenced policy rendered for this component into an `autoscaler` block."""

    name: str
    block: Obj
    generation: int | None = None


@dataclass(frozen=True, slots=True)
class PolicyHold:
    """The referenced policy cannot be used: the component keeps its last-known-good scaler."""

    name: str
    reason: str
    detail: str


PolicyOutcome = PolicyRendered | PolicyHold


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str
    reason: str
    message: str = ""


@dataclass(frozen=True, slots=True)
class Resolution:
    """What the component's autoscaler is, and where it came from."""

    block: Obj
    """`{"class": ..., "hpa"?: ..., "keda"?: ...}`; empty while holding (keep what runs)."""
    source: str
    policy: str | None = None
    policy_generation: int | None = None
    shadowed: str | None = None
    hold: PolicyHold | None = None
    condition: Condition | None = None
    """AutoscalerResolved, only for a component with a policy reference."""

    @property
    def klass(self) -> str | None:
        cls = self.block.get("class")
        return str(cls) if cls else None


def policy_ref(component_spec: Mapping[str, Any]) -> str | None:
    ref = component_spec.get("autoscalerPolicyRef") or {}
    name = ref.get("name") if isinstance(ref, Mapping) else None
    return str(name) if name else None


def resolve(
    *,
    mode: str,
    isvc_component: Mapping[str, Any],
    runtime_component: Mapping[str, Any],
    annotations: Mapping[str, str],
    policy: PolicyOutcome | None = None,
) -> Resolution:
    """The autoscaler block of one component (see the module docstring for the order).

    `policy` is the referenced policy's outcome; the caller computes it only when the component has a
    reference and no inline block (an inline block never needs the policy).
    """
    ref = policy_ref(isvc_component)
    inline = isvc_component.get("autoscaler")
    if mode == modes.MULTINODE:
        cond = Condition(RESOLVED_CONDITION, "False", UNSUPPORTED_MODE,
                         "MultiNode components get no autoscaler") if ref else None
        return Resolution({}, SOURCE_DEFAULT, condition=cond)
    if inline:
        cond = None
        if ref:
            cond = Condition(RESOLVED_CONDITION, "True", INLINE_PRECEDENCE,
                             f"inline autoscaler outranks AutoscalerPolicy {ref!r}")
        return Resolution(copy.deepcopy(dict(inline)), SOURCE_ISVC, shadowed=ref, condition=cond)
    if ref:
        if policy is None:
            policy = PolicyHold(ref, POLICY_NOT_FOUND, f"AutoscalerPolicy {ref!r} was not looked up")
        if isinstance(policy, PolicyHold):
            message = HOLD_PREFIX + policy.detail
            return Resolution({}, SOURCE_POLICY, policy=policy.name, hold=policy,
                              condition=Condition(RESOLVED_CONDITION, "False", policy.reason, message))
        cond = Condition(RESOLVED_CONDITION, "True", RENDERED_FROM_POLICY,
                         f"rendered from AutoscalerPolicy {policy.name!r}")
        return Resolution(copy.deepcopy(policy.block), SOURCE_POLICY, policy=policy.name,
                          policy_generation=policy.generation, condition=cond)
    if runtime_block := runtime_component.get("autoscaler"):
        return Resolution(copy.deepcopy(dict(runtime_block)), SOURCE_RUNTIME)
    if mode == modes.RAW_DEPLOYMENT and (legacy := legacy_block(annotations)) is not None:
        return Resolution(legacy, SOURCE_LEGACY)
    return Resolution({"class": HPA}, SOURCE_DEFAULT)


def legacy_block(annotations: Mapping[str, str]) -> Obj | None:
    """The block the legacy annotations ask for, or None when they ask for nothing.

    `ome.io/metrics` is never applied (only the webhook reads it); a KEDA class carries no triggers, which
    rendering reports as an error.
    """
    value = annotations.get(CLASS_ANNOTATION)
    target = annotations.get(TARGET_ANNOTATION)
    if value is None and target is None:
        return None
    klass = LEGACY_CLASSES.get(value or "hpa")
    if klass is None:
        return None  # the webhook rejects other values; an old object with one gets the default
    block: Obj = {"class": klass}
    text = (target or "").strip()
    if klass == HPA and text.isdigit() and 1 <= int(text) <= 100:
        block["hpa"] = {"metrics": [cpu_metric(int(text))]}
    return block


def cpu_metric(utilization: int) -> Obj:
    return {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": utilization}},
    }


def legacy_annotations(isvc: Mapping[str, Any], merged_component: Mapping[str, Any]) -> dict[str, str]:
    """The InferenceService's annotations overlaid with the component's own (the component wins)."""
    found = dict((isvc.get("metadata") or {}).get("annotations") or {})
    found.update(merged_component.get("annotations") or {})
    return {k: str(v) for k, v in found.items()}


def replica_bounds(
    *,
    component: str,
    mode: str,
    isvc_component: Mapping[str, Any],
    runtime_component: Mapping[str, Any],
    defaults: ReplicasDefaults | None,
) -> Bounds:
    """min and max: each from the InferenceService, else the runtime, else the replica defaults.

    `minReplicas: 0` counts as set; `maxReplicas: 0` counts as unset. With no default at all a component
    runs one replica (min 1, max = min).
    """
    explicit_min = _first(isvc_component.get("minReplicas"), runtime_component.get("minReplicas"),
                          zero_ok=True)
    explicit_max = _first(isvc_component.get("maxReplicas"), runtime_component.get("maxReplicas"),
                          zero_ok=False)
    minimum = explicit_min
    if minimum is None:
        minimum = defaults.default_min_replicas if defaults is not None else None
    if minimum is None:
        minimum = 1
    if explicit_max is not None:
        if minimum > explicit_max:
            if mode == modes.RAW_DEPLOYMENT:
                raise AutoscalingError(
                    f"raw {component}: minReplicas must not exceed maxReplicas: {minimum} > {explicit_max}"
                )
            return Bounds(minimum, minimum)
        return Bounds(minimum, explicit_max)
    default_max = defaults.max_for(component) if defaults is not None else None
    maximum = default_max if default_max is not None else minimum
    return Bounds(minimum, max(maximum, minimum, 1))


def _first(*values: Any, zero_ok: bool) -> int | None:
    for value in values:
        if value is None or isinstance(value, bool):
            continue
        number = int(value)
        if number == 0 and not zero_ok:
            continue
        return number
    return None


def floor_for_mode(mode: str, minimum: int) -> int:
    """The lowest count a component may run: OMENative keeps at least one Instance."""
    return max(minimum, 1) if mode == modes.OMENATIVE else minimum


def managed_by(klass: str | None) -> str | None:
    return MANAGED_BY.get(klass or "")
