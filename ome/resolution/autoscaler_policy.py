"""Render an AutoscalerPolicy for one component, and judge a policy for its status (pure; alpha).

A trigger's `metadata` values may hold literal text and the variables `{{ .Namespace }}`,
`{{ .ISVCName }}`, `{{ .Component }}`, `{{ .MinReplicas }}`, `{{ .MaxReplicas }}` and `{{ .TargetName }}`;
anything else between `{{` and `}}` makes the policy invalid. A `prometheus` trigger names a metric
provider in `providerRef` and sets `ignoreNullValues` explicitly; OME fills `serverAddress` (and
`authModes`) from the provider's binding, so the trigger cannot set them. `fallback.replicas` is a fixed
`value` or `fromComponent: MaxReplicas|MinReplicas`.

A reference OME cannot use holds the component (autoscaling.PolicyHold): `PolicyNotFound` (missing, or the
feature was off when the controller started), `ClassUnavailable` (KEDA's CRDs were not served at start),
`PolicyInvalid` (it does not render).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ome.config.inferenceservice_config import MetricProvider
from ome.resolution import autoscaling
from ome.resolution.autoscaling import Bounds, PolicyHold, PolicyOutcome, PolicyRendered

Obj = dict[str, Any]

READY: Final = "Ready"
IN_USE: Final = "InUse"
TEMPLATES_VALID: Final = "TemplatesValid"
PROVIDER_UNKNOWN: Final = "ProviderUnknown"
INVALID_TEMPLATE: Final = "InvalidTemplate"
INVALID_TRIGGER: Final = "InvalidTrigger"
ATTACHED: Final = "Attached"
NO_CONSUMERS: Final = "NoConsumers"
HOLD_EVENT: Final = "AutoscalerPolicyHold"
VARIABLES: Final = ("Namespace", "ISVCName", "Component", "MinReplicas", "MaxReplicas", "TargetName")
_TEMPLATE = re.compile(r"\{\{(.*?)\}\}")
_VARIABLE = re.compile(r"^\s*\.(\w+)\s*$")
_PROVIDER_SET: Final = ("serverAddress", "authModes")


class PolicyProblem(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass(frozen=True, slots=True)
class Context:
    namespace: str
    isvc: str
    component: str
    bounds: Bounds

    def variables(self) -> dict[str, str]:
        return {
            "Namespace": self.namespace,
            "ISVCName": self.isvc,
            "Component": self.component,
            "MinReplicas": str(self.bounds.min),
            "MaxReplicas": str(self.bounds.max),
            "TargetName": f"{self.isvc}-{self.component}",
        }


def outcome(
    name: str,
    policy: Mapping[str, Any] | None,
    ctx: Context,
    *,
    enabled: bool,
    keda_served: bool,
    providers: Mapping[str, MetricProvider],
) -> PolicyOutcome:
    """What the reference `name` gives this component: a rendered block, or a hold."""
    if not enabled:
        return PolicyHold(name, autoscaling.POLICY_NOT_FOUND,
                          f"AutoscalerPolicy {name!r} cannot be used: the AutoscalerPolicy feature was not "
                          "enabled when the controller started")
    if policy is None:
        return PolicyHold(name, autoscaling.POLICY_NOT_FOUND,
                          f'AutoscalerPolicy "{name}" not found in namespace {ctx.namespace}')
    spec = policy.get("spec") or {}
    if spec.get("class") == autoscaling.KEDA and not keda_served:
        return PolicyHold(name, autoscaling.CLASS_UNAVAILABLE,
                          f'AutoscalerPolicy "{name}" has class KEDA, but the keda.sh ScaledObject CRD was '
                          "not served when the controller started")
    try:
        block = render(spec, ctx, providers)
    except PolicyProblem as exc:
        return PolicyHold(name, autoscaling.POLICY_INVALID, f'AutoscalerPolicy "{name}": {exc.message}')
    generation = (policy.get("metadata") or {}).get("generation")
    return PolicyRendered(name, block, int(generation) if generation is not None else None)


def render(spec: Mapping[str, Any], ctx: Context, providers: Mapping[str, MetricProvider]) -> Obj:
    """The component `autoscaler` block the policy spec renders into; raises PolicyProblem."""
    klass = spec.get("class")
    if klass == autoscaling.HPA:
        block: Obj = {"class": autoscaling.HPA}
        if spec.get("hpa"):
            block["hpa"] = copy.deepcopy(dict(spec["hpa"]))
        return block
    if klass != autoscaling.KEDA:
        raise PolicyProblem("InvalidClass", f"class {klass!r} is not HPA or KEDA")
    template = spec.get("keda") or {}
    triggers = template.get("triggers") or []
    if not triggers:
        raise PolicyProblem(INVALID_TRIGGER, "class KEDA requires keda.triggers")
    keda: Obj = {"triggers": [_trigger(i, t, ctx, providers) for i, t in enumerate(triggers)]}
    for key in ("pollingInterval", "cooldownPeriod", "idleReplicaCount", "advanced"):
        if template.get(key) is not None:
            keda[key] = copy.deepcopy(template[key])
    if fallback := template.get("fallback"):
        keda["fallback"] = {
            "failureThreshold": fallback.get("failureThreshold"),
            "replicas": _fallback_replicas(fallback.get("replicas") or {}, ctx.bounds),
        }
    return {"class": autoscaling.KEDA, "keda": keda}


def _trigger(index: int, trigger: Mapping[str, Any], ctx: Context,
             providers: Mapping[str, MetricProvider]) -> Obj:
    kind = str(trigger.get("type") or "")
    metadata = {str(k): _fill(str(v), ctx, f"keda.triggers[{index}].metadata.{k}")
                for k, v in (trigger.get("metadata") or {}).items()}
    provider_name = (trigger.get("providerRef") or {}).get("name")
    if kind == "prometheus":
        if not provider_name:
            raise PolicyProblem(INVALID_TRIGGER, f"keda.triggers[{index}] (prometheus) requires providerRef")
        if "ignoreNullValues" not in metadata:
            raise PolicyProblem(INVALID_TRIGGER,
                                f"keda.triggers[{index}] (prometheus) requires an explicit ignoreNullValues")
    for key in _PROVIDER_SET:
        if provider_name and key in metadata:
            raise PolicyProblem(INVALID_TRIGGER,
                                f"keda.triggers[{index}].metadata.{key} is set from the provider; remove it")
    if provider_name:
        binding = providers.get(provider_name)
        if binding is None:
            raise PolicyProblem(PROVIDER_UNKNOWN, f"metric provider {provider_name!r} is not bound")
        metadata["serverAddress"] = binding.server_address
        if binding.auth_modes:
            metadata["authModes"] = binding.auth_modes
    rendered: Obj = {"type": kind, "metadata": metadata}
    if trigger.get("metricType"):
        rendered["metricType"] = trigger["metricType"]
    return rendered


def _fill(value: str, ctx: Context, where: str) -> str:
    variables = ctx.variables()

    def substitute(found: re.Match[str]) -> str:
        inner = _VARIABLE.match(found.group(1))
        if inner is None or inner.group(1) not in variables:
            raise PolicyProblem(INVALID_TEMPLATE, f"{where}: {found.group(0)!r} is not one of the variables "
                                + ", ".join(f"{{{{ .{v} }}}}" for v in VARIABLES))
        return variables[inner.group(1)]

    return _TEMPLATE.sub(substitute, value)


def _fallback_replicas(source: Mapping[str, Any], bounds: Bounds) -> int:
    if source.get("value") is not None:
        return int(source["value"])
    by_field = {"MaxReplicas": bounds.max, "MinReplicas": bounds.min}
    return by_field.get(str(source.get("fromComponent")), bounds.max)


def ready_condition(
    policy: Mapping[str, Any], providers: Mapping[str, MetricProvider]
) -> tuple[str, str, str]:
    """(status, reason, message) of the policy's Ready condition: valid with its providers bound."""
    probe = Context("namespace", "isvc", "engine", Bounds(1, 1))
    try:
        render(policy.get("spec") or {}, probe, providers)
    except PolicyProblem as exc:
        return "False", exc.reason, exc.message
    return "True", TEMPLATES_VALID, "templates render and every provider is bound"


def in_use_condition(attached: int) -> tuple[str, str, str]:
    if attached > 0:
        return "True", ATTACHED, f"{attached} component(s) reference the policy"
    return "False", NO_CONSUMERS, "no component references the policy"


def hold_event_message(component: str, hold: PolicyHold) -> str:
    return f"{component} autoscaler is holding last-known-good ({hold.reason}): {hold.detail}"
