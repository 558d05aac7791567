"""InferenceService rules about how components roll out and scale: rollout groups, update budgets and
the scaling policy. Each function takes the spec and returns the first error, or None.

Messages end with the reason in parentheses, as the rollout-groups page says admission messages do, so
scripts can match on `CoordinationRequiresOMENative` and friends.
"""

from __future__ import annotations

import re
from typing import Any, Final

from ome.resolution import modes
from ome.webhooks.loose import COMPONENTS, as_dict, as_list, declared_components, is_int, text

Obj = dict[str, Any]

COORDINATION_REQUIRES_OMENATIVE: Final = "CoordinationRequiresOMENative"
CANARY_REQUIRES_OMENATIVE: Final = "CanaryRequiresOMENative"
SCALING_MODE_NOT_IMPLEMENTED: Final = "ScalingModeNotImplemented"
UNIMPLEMENTED_SCALING_MODES: Final = frozenset({"Proportional", "Pinned"})
_PERCENT = re.compile(r"^(\d+)%$")


def component_mode(spec: Obj, component: str) -> str:
    """The mode the InferenceService declares for a component: its annotation, then spec.deploymentMode.

    A leader, a worker or the runtime's annotation does not count (deployment-modes page), so rollout
    groups need OMENative written in the InferenceService.
    """
    spec_mode = spec.get("deploymentMode")
    return modes.declared_mode(
        as_dict(spec.get(component)), spec_mode if isinstance(spec_mode, str) else None
    )


def rollout_groups_error(spec: Obj) -> str | None:
    groups = [as_dict(g) for g in as_list(as_dict(spec.get("rollout")).get("groups"))]
    declared = declared_components(spec)
    seen: dict[str, int] = {}
    for index, group in enumerate(groups):
        where = f"spec.rollout.groups[{index}]"
        canary = _is_canary(group)
        for member in as_list(group.get("components")):
            if member not in COMPONENTS:
                reason = "InvalidComponentInCoordinationGroup"
                return f"{where}: {member!r} is not engine, decoder or router ({reason})"
            if member in seen:
                return (
                    f"{where}: component {member!r} is already in spec.rollout.groups[{seen[member]}] "
                    "(DuplicateComponentInCoordinationGroups)"
                )
            seen[member] = index
            if member not in declared:
                reason = "OrphanCoordinationGroup"
                return f"{where}: component {member!r} is not declared on the InferenceService ({reason})"
            if (mode := component_mode(spec, member)) != modes.OMENATIVE:
                reason = CANARY_REQUIRES_OMENATIVE if canary else COORDINATION_REQUIRES_OMENATIVE
                kind = "a canary group" if canary else "a rollout group"
                return (
                    f'{where}: component {member!r} has deploymentMode="{mode}"; {kind} needs OMENative '
                    "set in spec.deploymentMode or the component's ome.io/deploymentMode annotation "
                    f"({reason})"
                )
        if (error := _group_budget_error(where, as_dict(group.get("rollingUpdate")))) is not None:
            return error
    return None


def _is_canary(group: Obj) -> bool:
    return group.get("canary") is not None or as_dict(group.get("policyRef")).get("progression") == "canary"


def _group_budget_error(where: str, rolling: Obj) -> str | None:
    if not rolling:
        return None
    field = f"{where}.rollingUpdate"
    for key in ("maxSurge", "maxUnavailable"):
        if (error := budget_value_error(f"{field}.{key}", rolling.get(key))) is not None:
            return error
    if is_explicit_zero(rolling.get("maxSurge")) and is_explicit_zero(rolling.get("maxUnavailable")):
        return (
            f"{field}: maxSurge and maxUnavailable are both zero, so the rollout could never start; "
            "set at least one above zero (ZeroBudgetPacingUnstartable)"
        )
    return None


def lifecycle_error(spec: Obj) -> str | None:
    """Per-component lifecycle: sane budgets, never both zero, and a non-negative minReadySeconds."""
    for name, component in declared_components(spec).items():
        lifecycle = as_dict(component.get("lifecycle"))
        min_ready = lifecycle.get("minReadySeconds")
        if isinstance(min_ready, int) and not isinstance(min_ready, bool) and min_ready < 0:
            field = f"spec.{name}.lifecycle.minReadySeconds"
            return f"{field} must be >= 0, got {min_ready} (InvalidMinReadySeconds)"
        rolling = as_dict(as_dict(lifecycle.get("updateStrategy")).get("rollingUpdate"))
        field = f"spec.{name}.lifecycle.updateStrategy.rollingUpdate"
        for key in ("maxUnavailable", "maxSurge"):
            if (error := budget_value_error(f"{field}.{key}", rolling.get(key))) is not None:
                return error
        if is_explicit_zero(rolling.get("maxSurge")) and is_explicit_zero(rolling.get("maxUnavailable")):
            return (
                f"{field}: maxSurge and maxUnavailable are both zero, so no Instance could ever be "
                "updated; set at least one above zero (RollingUpdateZeroBudget)"
            )
    return None


def budget_value_error(field: str, value: Any) -> str | None:
    """An int-or-string budget: a non-negative integer, or a percentage from 0% to 100%."""
    if value is None:
        return None
    if is_int(value):
        return None if value >= 0 else f"{field} must be >= 0, got {value} (InvalidRollingUpdateInteger)"
    match = _PERCENT.match(text(value))
    if match is None or int(match.group(1)) > 100:
        reason = "InvalidRollingUpdatePercent"
        return f"{field} must be an integer or a percentage from 0% to 100%, got {value!r} ({reason})"
    return None


def is_explicit_zero(value: Any) -> bool:
    """0 or "0%": unset is not zero, since it resolves to a default budget."""
    return bool((is_int(value) and value == 0) or value == "0%")


def scaling_policy_error(spec: Obj, old_spec: Obj | None = None) -> str | None:
    """Only Independent works; on update only a new or changed policy is checked, so an object stored
    before the rule keeps accepting unrelated edits."""
    policy = spec.get("scalingPolicy")
    if old_spec is not None and old_spec.get("scalingPolicy") == policy:
        return None
    mode = as_dict(policy).get("mode")
    if mode in UNIMPLEMENTED_SCALING_MODES:
        return (
            f"spec.scalingPolicy.mode {mode} is not implemented in this release; use Independent, the "
            f"default ({SCALING_MODE_NOT_IMPLEMENTED})"
        )
    return None
