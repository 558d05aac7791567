"""A component's PodDisruptionBudget `{isvc}-{component}` (pure; configure-pod-disruption-budgets page).

The budget is the component's `minAvailable` or `maxUnavailable` (a field the InferenceService sets
overrides the same field from the runtime), else its mode's default from the config's
`podDisruptionBudget`, else none. MultiNode gets none.

RawDeployment copies the budget as it is, selecting the pods by `app={name}`. OMENative writes an integer
`minAvailable` counted in pods: the Instances the component should run times the pods in each (a leader
and `worker.size` workers), a percentage rounded up; it follows the count as the component scales.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ome.config.pdb_config import PDBConfig, budget_problem
from ome.resolution import modes, naming, objects

Obj = dict[str, Any]

FIELDS: Final = ("minAvailable", "maxUnavailable")


class BudgetError(Exception):
    """The component's budget cannot be resolved or written: `Failed to reconcile component`, retried."""


@dataclass(frozen=True, slots=True)
class Budget:
    field: str
    """minAvailable or maxUnavailable."""
    value: int | str


def resolve_budget(
    component: str,
    mode: str,
    isvc_component: Mapping[str, Any],
    runtime_component: Mapping[str, Any],
    defaults: PDBConfig,
) -> Budget | None:
    """The budget in force, or None (no PodDisruptionBudget); raises BudgetError when they clash."""
    if mode not in (modes.RAW_DEPLOYMENT, modes.OMENATIVE):
        return None
    prefix = f"failed to resolve {component} PodDisruptionBudget"
    for key in FIELDS:
        value = runtime_component.get(key)
        if value is not None and (problem := budget_problem(value)) is not None:
            raise BudgetError(f"{prefix}: runtime {component}Config.{key} {problem}")
    merged = {key: _first(isvc_component.get(key), runtime_component.get(key)) for key in FIELDS}
    present = [key for key in FIELDS if merged[key] is not None]
    if len(present) == 2:
        raise BudgetError(f"{prefix}: minAvailable and maxUnavailable cannot both be set")
    if present:
        return Budget(present[0], merged[present[0]])
    default = defaults.for_mode(mode)
    if default is None:
        return None
    spec = default.as_spec()
    key = next(iter(spec))
    return Budget(key, spec[key])


def _first(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


def pods_min_available(budget: Budget, instances: int, pods_per_instance: int) -> int:
    """OMENative's integer minAvailable: the budget over Instances x pods per Instance, % rounded up."""
    total = max(instances, 0) * max(pods_per_instance, 1)
    value = budget.value
    if isinstance(value, str) and value.endswith("%"):
        amount = math.ceil(total * int(value[:-1]) / 100)
    else:
        amount = int(value)
    if budget.field == "minAvailable":
        return min(amount, total) if isinstance(value, str) else amount
    return max(total - amount, 0)


def render(
    isvc: Mapping[str, Any],
    *,
    component: str,
    mode: str,
    budget: Budget,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    selector: Mapping[str, str],
    instances: int = 1,
    pods_per_instance: int = 1,
) -> Obj:
    name = naming.component_name(isvc["metadata"]["name"], component)
    if mode == modes.OMENATIVE:
        spec: Obj = {"minAvailable": pods_min_available(budget, instances, pods_per_instance)}
    else:
        spec = {budget.field: budget.value}
    spec["selector"] = {"matchLabels": dict(selector)}
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": objects.metadata(isvc, name, labels, annotations or None),
        "spec": spec,
    }


def preflight_error(
    component: str, existing: Mapping[str, Any] | None, isvc: Mapping[str, Any]
) -> str | None:
    """A PodDisruptionBudget under the component's name that OME did not create blocks it."""
    if existing is None:
        return None
    uid = isvc["metadata"].get("uid")
    refs = (existing.get("metadata") or {}).get("ownerReferences") or []
    if any(ref.get("uid") == uid and ref.get("controller") for ref in refs):
        return None
    meta = existing.get("metadata") or {}
    return (
        f"failed to preflight {component} PodDisruptionBudget: PodDisruptionBudget "
        f"{meta.get('namespace')}/{meta.get('name')} is not controlled by InferenceService "
        f"{isvc['metadata']['name']}"
    )
