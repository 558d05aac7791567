"""Canary admission (canary-progression.md and canary-analysis.md, What admission rejects), and the
RolloutPolicy body rules (rollout-policy.md, Rules that keep a policy portable).

Every function returns the first error message, or None. Messages name the field and end with the
reason in parentheses (`CanaryInvalid`, `MultipleCanaryGroups`, `AnalysisInvalid`,
`RolloutPolicyInvalid`). The same plan-body check runs on an inline canary, on a policy body and on
the composed plan when a rollout run opens (`ome.omenative.canary_run`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from ome.config.durations import parse_duration
from ome.webhooks.inferenceservice_rollout import budget_value_error
from ome.webhooks.loose import COMPONENTS, as_dict, as_list, declared_components, is_int, text

Obj = dict[str, Any]

CANARY_INVALID: Final = "CanaryInvalid"
MULTIPLE_CANARY_GROUPS: Final = "MultipleCanaryGroups"
ANALYSIS_INVALID: Final = "AnalysisInvalid"
POLICY_INVALID: Final = "RolloutPolicyInvalid"
OPERATORS: Final = ("LT", "LTE", "GT", "GTE")
_NUMBER: Final = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$|^[+-]?(Inf|inf|NaN)$")


def progression_kind(group: Mapping[str, Any]) -> str:
    """The group's kind: an inline block wins over policyRef.progression; none is blue-green."""
    for key in ("canary", "blueGreen", "rollingUpdate"):
        if group.get(key) is not None:
            return key
    return text(as_dict(group.get("policyRef")).get("progression")) or "blueGreen"


def canary_units(group: Mapping[str, Any], declared: Mapping[str, Any]) -> list[str]:
    """The units a canary group drives: `router`, and `engine` for the engine and the decoder."""
    units: list[str] = []
    for member in as_list(group.get("components")):
        unit = "engine" if member == "decoder" else member
        if unit in ("router", "engine") and unit not in units:
            units.append(unit)
    return units


def canary_groups_error(spec: Obj) -> str | None:
    groups = [as_dict(g) for g in as_list(as_dict(spec.get("rollout")).get("groups"))]
    declared = declared_components(spec)
    owner: dict[str, int] = {}
    for index, group in enumerate(groups):
        if progression_kind(group) != "canary":
            continue
        for unit in canary_units(group, declared):
            if unit in owner:
                return (
                    f'spec.rollout.groups: canary unit "{unit}" is driven by both groups[{owner[unit]}] and '
                    f"groups[{index}]; a unit may have at most one canary run ({MULTIPLE_CANARY_GROUPS})"
                )
            owner[unit] = index
    for index, group in enumerate(groups):
        if progression_kind(group) != "canary":
            continue
        if group.get("canary") is not None:
            error = canary_plan_error(f"spec.rollout.groups[{index}].canary", as_dict(group.get("canary")))
            if error is not None:
                return error
        if (error := _members_error(index, group, declared)) is not None:
            return error
    return None


def _members_error(index: int, group: Obj, declared: Mapping[str, Any]) -> str | None:
    where = f"spec.rollout.groups[{index}]"
    members = [m for m in as_list(group.get("components"))]
    for member in members:
        if member not in COMPONENTS:
            return (
                f'{where}: canary component "{member}" is not one of router/engine/decoder ({CANARY_INVALID})'
            )
        if member not in declared:
            return (
                f'{where}: canary component "{member}" is not declared on the InferenceService '
                f"({CANARY_INVALID})"
            )
    for unit in canary_units(group, declared):
        if unit not in members:
            return (
                f'{where}: a canary group covering the "{unit}" unit must include its entrypoint Component '
                f'"{unit}" — that is what the step machine and traffic weight are driven through '
                f"({CANARY_INVALID})"
            )
    if "engine" in declared and "decoder" in declared and ("engine" in members) != ("decoder" in members):
        return (
            f"{where}: this InferenceService declares both engine and decoder, so a canary group naming "
            f"either must name both — they roll as one unit ({CANARY_INVALID})"
        )
    if group.get("maintainRatio") is not None:
        return (
            f"{where}: maintainRatio is not honored on a canary group (the canary engine does not enforce "
            "it) — remove it, or use a blueGreen/rollingUpdate group for ratio-guarded rollout "
            f"({CANARY_INVALID})"
        )
    return None


def canary_plan_error(where: str, canary: Obj) -> str | None:
    """The plan-body rules of one canary, wherever it comes from."""
    steps = [as_dict(s) for s in as_list(canary.get("steps"))]
    if not steps:
        return f"{where}.steps must not be empty ({CANARY_INVALID})"
    if (error := analysis_error(where, steps)) is not None:
        return error
    timeout = canary.get("readyTimeout")
    if timeout is not None and (parse_duration(text(timeout)) or 0.0) <= 0:
        return f"{where}.readyTimeout must be > 0 when set ({CANARY_INVALID})"
    last_traffic = steps[-1].get("traffic")
    if last_traffic != 100:
        return f"{where} final step traffic must be 100, got {_int_text(last_traffic)} ({CANARY_INVALID})"
    previous = 0
    for index, step in enumerate(steps):
        value, percent, problem = parse_capacity(step.get("capacity"))
        if problem is not None:
            return f"{where}.steps[{index}].capacity: {problem} ({CANARY_INVALID})"
        traffic = step.get("traffic")
        weight = traffic if isinstance(traffic, int) and not isinstance(traffic, bool) else 0
        if not 0 <= weight <= 100:
            return f"{where}.steps[{index}].traffic: traffic {weight} must be in [0,100] ({CANARY_INVALID})"
        if weight < previous:
            return (
                f"{where}.steps[{index}].traffic: traffic {weight} must be >= the previous step's {previous} "
                f"(canary weights are non-decreasing) ({CANARY_INVALID})"
            )
        previous = weight
        shown = _capacity_text(step.get("capacity"))
        if weight > 0 and value == 0:
            return (
                f'{where}.steps[{index}].capacity: capacity "{shown}" resolves to zero new capacity but '
                f"traffic is {weight} — a step cannot send traffic to zero capacity ({CANARY_INVALID})"
            )
        if index == len(steps) - 1 and percent and value != 100:
            return (
                f"{where}.steps[{index}].capacity: final step capacity must be 100% (rollout completes at "
                f'full capacity), got "{shown}" ({CANARY_INVALID})'
            )
    return None


def analysis_error(where: str, steps: list[Obj]) -> str | None:
    for index, step in enumerate(steps):
        if step.get("analysis") is None:
            continue
        spec = as_dict(step.get("analysis"))
        at = f"{where}.steps[{index}].analysis"
        if (parse_duration(text(spec.get("interval"))) or 0.0) <= 0:
            return f"{at}: interval must be > 0 ({ANALYSIS_INVALID})"
        limit = spec.get("failureLimit")
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            return f"{at}: failureLimit must be >= 1 ({ANALYSIS_INVALID})"
        metrics = [as_dict(m) for m in as_list(spec.get("metrics"))]
        if not metrics:
            return f"{at}: at least one metric is required ({ANALYSIS_INVALID})"
        seen: set[str] = set()
        for j, metric in enumerate(metrics):
            name = text(metric.get("name"))
            if not name:
                return f"{at}.metrics[{j}].name must not be empty ({ANALYSIS_INVALID})"
            if name in seen:
                return f'{at}.metrics[{j}]: duplicate metric name "{name}" ({ANALYSIS_INVALID})'
            seen.add(name)
            if not text(metric.get("query")).strip():
                return f'{at}.metrics[{j}] ("{name}"): query must not be empty ({ANALYSIS_INVALID})'
            threshold = text(metric.get("threshold"))
            if not _NUMBER.match(threshold):
                return (
                    f'{at}.metrics[{j}] ("{name}"): threshold "{threshold}" must be numeric '
                    f"({ANALYSIS_INVALID})"
                )
            operator = text(metric.get("operator"))
            if operator not in OPERATORS:
                return (
                    f'{at}.metrics[{j}] ("{name}"): operator "{operator}" must be one of LT/LTE/GT/GTE '
                    f"({ANALYSIS_INVALID})"
                )
    return None


def parse_capacity(capacity: Any) -> tuple[int, bool, str | None]:
    """(value, is a percentage, problem): an integer >= 0, or "<N>%" with N from 0 to 100."""
    if is_int(capacity):
        if capacity < 0:
            return 0, False, f"capacity {capacity} must not be negative"
        return int(capacity), False, None
    raw = text(capacity)
    if not raw.endswith("%"):
        return 0, False, (
            f'capacity "{raw}" is not a percentage — use "<N>%" for a fraction of desired replicas, or an '
            "unquoted integer for an absolute count"
        )
    try:
        value = int(raw[:-1])
    except ValueError:
        return 0, True, f'capacity "{raw}" is not a valid percentage — use "<N>%" with integer N in [0,100]'
    if value < 0:
        return 0, True, f'capacity "{raw}" must not be negative'
    if value > 100:
        return 0, True, f'capacity "{raw}" must not exceed 100% (capacity is a fraction of desired replicas)'
    return value, True, None


def _capacity_text(capacity: Any) -> str:
    return str(capacity) if capacity is not None else ""


def _int_text(value: Any) -> str:
    return str(value) if is_int(value) else "0"


# -- RolloutPolicy bodies ---------------------------------------------------------------------------


def policy_body_error(spec: Obj) -> str | None:
    """The portability rules, then the same plan rules as an inline canary (where = `spec.canary`)."""
    canary = spec.get("canary")
    if canary is None:
        rolling = as_dict(spec.get("rollingUpdate"))
        for key in ("maxSurge", "maxUnavailable"):
            if (error := budget_value_error(f"spec.rollingUpdate.{key}", rolling.get(key))) is not None:
                return error
        return None
    canary = as_dict(canary)
    prometheus = as_dict(canary.get("prometheus"))
    if prometheus.get("serverAddress"):
        return (
            "spec.canary.prometheus.serverAddress is not allowed in a policy body — a cluster-local URL "
            "defeats portability; name a providerRef bound in the operator's metricProviders configuration "
            f"instead ({POLICY_INVALID})"
        )
    if prometheus.get("authRef") is not None:
        return (
            "spec.canary.prometheus.authRef is not allowed in a policy body — auth comes from the "
            f"providerRef's cluster binding ({POLICY_INVALID})"
        )
    steps = [as_dict(s) for s in as_list(canary.get("steps"))]
    gated = any(s.get("analysis") is not None for s in steps)
    if gated and not as_dict(prometheus.get("providerRef")).get("name"):
        return (
            "spec.canary.prometheus.providerRef is required when any step declares analysis — a policy must "
            f"never ship a gate with no resolvable metrics source ({POLICY_INVALID})"
        )
    for index, step in enumerate(steps):
        if is_int(step.get("capacity")):
            return (
                f"spec.canary.steps[{index}].capacity: a policy step must give capacity as a percentage such "
                f'as "25%", not a count, so it fits any InferenceService ({POLICY_INVALID})'
            )
    return canary_plan_error("spec.canary", canary)


def policy_update_error(spec: Obj, old_spec: Obj | None, consumers: int) -> str | None:
    """A create or update of a RolloutPolicy: the body rules; a policy in use keeps its kind."""
    if (error := policy_body_error(spec)) is not None:
        return error
    if old_spec is not None and consumers:
        kind, was = _policy_kind(spec), _policy_kind(old_spec)
        if kind != was:
            return (
                f"spec: a RolloutPolicy referenced by {consumers} rollout group(s) cannot change its "
                f"progression from {was} to {kind}; create a new policy and move the references to it "
                f"({POLICY_INVALID})"
            )
    return None


def policy_update_warnings(old_spec: Obj | None, spec: Obj, consumers: int) -> list[str]:
    if old_spec is None or not consumers or old_spec == spec:
        return []
    return [
        f"this RolloutPolicy is referenced by {consumers} rollout group(s); the edit applies to their next "
        "rollout — a rollout in progress keeps its pinned plan until it is repinned (ome.io/rollout-repin)"
    ]


def _policy_kind(spec: Obj) -> str | None:
    return next((k for k in ("canary", "blueGreen", "rollingUpdate") if spec.get(k) is not None), None)
