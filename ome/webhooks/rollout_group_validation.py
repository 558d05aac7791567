"""Admission rules for rollout groups that promise what no progression would do (rollout-groups.md,
What admission rejects): `OrderNotHonored`, `GroupOrderingNotHonored`, `SoakNotHonored`,
`RolloutPolicyRefUnsupported`, on update `RollingUpdateLockstepViolation` and
`PairingProtocolChangeUncoordinated`, and the warning `RatioToleranceTooHigh`.

The component checks (`InvalidComponentInCoordinationGroup`, `OrphanCoordinationGroup`,
`DuplicateComponentInCoordinationGroups`, the OMENative requirement and the budgets) are in
`inferenceservice_rollout.rollout_groups_error`; the canary rules in `canary_validation`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ome.omenative import coordination_plan as cplan
from ome.omenative import coordination_types as ctypes
from ome.webhooks.loose import as_dict, as_list

Obj = dict[str, Any]

ORDER_NOT_HONORED: Final = "OrderNotHonored"
GROUP_ORDERING_NOT_HONORED: Final = "GroupOrderingNotHonored"
SOAK_NOT_HONORED: Final = "SoakNotHonored"
POLICY_REF_UNSUPPORTED: Final = "RolloutPolicyRefUnsupported"
LOCKSTEP_VIOLATION: Final = "RollingUpdateLockstepViolation"
PAIRING_UNCOORDINATED: Final = "PairingProtocolChangeUncoordinated"
RATIO_TOO_HIGH: Final = "RatioToleranceTooHigh"
RATIO_WARNING_ABOVE: Final = 50

SCALING_FIELDS: Final = frozenset({
    "minReplicas", "maxReplicas", "scaleTarget", "scaleMetric", "autoscaler", "kedaConfig",
})
"""A component's fields that change how many Instances run, not their pods: not a lockstep change."""


class RolloutPolicyGate:
    """Whether the RolloutPolicy feature is on (alpha, off by default); whoever enables the feature at
    startup sets `enabled`."""

    def __init__(self) -> None:
        self.enabled = False


ROLLOUT_POLICY_GATE: Final = RolloutPolicyGate()


def _groups(spec: Mapping[str, Any]) -> list[Obj]:
    return [as_dict(g) for g in as_list(as_dict(spec.get("rollout")).get("groups"))]


def validate(spec: Obj, old_spec: Obj | None) -> str | None:
    """The first rejection for this create (old_spec None) or update, or None."""
    if old_spec is None or as_dict(old_spec.get("rollout")) != as_dict(spec.get("rollout")):
        # As the other ordering rules, only when the rollout is written: a stored object keeps working.
        for rule in (order_error, group_ordering_error, soak_error, policy_ref_error):
            if (error := rule(spec)) is not None:
                return error
    if old_spec is not None:
        for update_rule in (lockstep_error, pairing_change_error):
            if (error := update_rule(old_spec, spec)) is not None:
                return error
    return None


def order_error(spec: Obj) -> str | None:
    for index, group in enumerate(_groups(spec)):
        if as_list(group.get("order")):
            return (
                f"spec.rollout.groups[{index}]: order is not applied by any progression — the Components in "
                "a group advance together; to roll Components one at a time, declare one single-Component "
                f"blueGreen group per Component, in the desired sequence ({ORDER_NOT_HONORED})"
            )
    return None


def group_ordering_error(spec: Obj) -> str | None:
    """Under `groupOrdering: Sequential` (the default), two or more groups only as a sequence."""
    groups = _groups(spec)
    if len(groups) < 2 or as_dict(spec.get("rollout")).get("groupOrdering") == "Concurrent":
        return None
    for index, group in enumerate(groups):
        kind = cplan.kind_of(group)
        if kind == ctypes.CANARY:
            shape = "a canary group"
        elif kind == ctypes.ROLLING_UPDATE:
            shape = "a rollingUpdate group"
        elif len(as_list(group.get("components"))) != 1:
            shape = "a multi-Component group"
        else:
            continue
        return (
            "spec.rollout.groups: groups[] is ordered (group N completes before group N+1 begins), but that "
            "is enforced only for a run of single-Component blueGreen groups; "
            f"groups[{index}] is {shape}, so the groups would run concurrently and the declared order "
            "would be dropped; set "
            f"spec.rollout.groupOrdering: Concurrent to run them side by side ({GROUP_ORDERING_NOT_HONORED})"
        )
    return None


def soak_error(spec: Obj) -> str | None:
    groups = _groups(spec)
    sequence = cplan.is_sequence(groups)
    for index, group in enumerate(groups):
        if group.get("soak") is None:
            continue
        if cplan.kind_of(group) == ctypes.CANARY:
            return (
                f"spec.rollout.groups[{index}]: soak is not honored on a canary group "
                f"(the canary engine does not gate on it) ({SOAK_NOT_HONORED})"
            )
        if not sequence:
            return (
                f"spec.rollout.groups[{index}]: soak is honored only when the rollout is a sequence of "
                "single-Component groups (which roll one-at-a-time); this rollout runs groups concurrently, "
                f"so the soak would be dropped ({SOAK_NOT_HONORED})"
            )
    return None


def policy_ref_error(spec: Obj, *, enabled: bool | None = None) -> str | None:
    on = ROLLOUT_POLICY_GATE.enabled if enabled is None else enabled
    if on:
        return None
    for index, group in enumerate(_groups(spec)):
        if group.get("policyRef") is not None:
            return (
                f"spec.rollout.groups[{index}].policyRef: this cluster does not have the rollout policy "
                "feature enabled, so the ref would silently no-op — inline the progression instead "
                f"({POLICY_REF_UNSUPPORTED})"
            )
    return None


def pod_settings(spec: Mapping[str, Any], component: str) -> Obj:
    """What of a component's spec reaches its pods (everything but the Instance counts)."""
    return {k: v for k, v in as_dict(spec.get(component)).items() if k not in SCALING_FIELDS}


def lockstep_error(old_spec: Obj, spec: Obj) -> str | None:
    """A rolling-update group's components change their pod settings together or not at all."""
    for group in _groups(spec):
        if cplan.kind_of(group) != ctypes.ROLLING_UPDATE:
            continue
        members = [str(c) for c in as_list(group.get("components"))]
        changed = [c for c in members if pod_settings(old_spec, c) != pod_settings(spec, c)]
        unchanged = [c for c in members if c not in changed]
        if changed and unchanged:
            return (
                "spec.rollout: rollingUpdate group requires all components to bump together; changed "
                f"[{' '.join(changed)}] but not [{' '.join(unchanged)}] ({LOCKSTEP_VIOLATION})"
            )
    return None


def pairing_change_error(old_spec: Obj, spec: Obj) -> str | None:
    """A token-to-token change needs the engine and the decoder in one blue-green (or canary) group."""
    before = as_dict(old_spec.get("rollout")).get("pairingProtocol") or ""
    after = as_dict(spec.get("rollout")).get("pairingProtocol") or ""
    if before == after or not before or not after:
        return None
    if spec.get("engine") is None or spec.get("decoder") is None:
        return None
    for group in _groups(spec):
        members = set(as_list(group.get("components")))
        if {"engine", "decoder"} <= members and cplan.kind_of(group) in (ctypes.BLUE_GREEN, ctypes.CANARY):
            return None
    return (
        f'spec.rollout.pairingProtocol: changing the pairing protocol ("{before}" -> "{after}") requires '
        "engine and decoder to roll as one blueGreen or canary group; declare a spec.rollout group listing "
        "both components (rollingUpdate groups and independent rollouts cannot keep a pairable "
        f"engine+decoder pair serving through the transition) ({PAIRING_UNCOORDINATED})"
    )


def warnings(spec: Obj) -> list[str]:
    for index, group in enumerate(_groups(spec)):
        tolerance = as_dict(group.get("maintainRatio")).get("tolerance")
        if isinstance(tolerance, int) and not isinstance(tolerance, bool) and tolerance > RATIO_WARNING_ABOVE:
            return [
                f"spec.rollout.groups[{index}].maintainRatio.tolerance={tolerance} effectively disables "
                f"ratio enforcement (>{RATIO_WARNING_ABOVE}) ({RATIO_TOO_HIGH})"
            ]
    return []
