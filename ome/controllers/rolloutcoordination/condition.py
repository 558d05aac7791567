"""`RolloutCoordinationReady` for the InferenceService controller, which owns the conditions list: the
same plan the rollout coordination reconciler reports, read from the same cache."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ome.controllers.inferenceservice import status
from ome.controllers.rolloutcoordination import observe
from ome.omenative import coordination_plan as cplan
from ome.omenative import coordination_status as cstatus


def with_condition(
    fields: dict[str, Any], reader: Any, isvc: dict[str, Any], now: datetime
) -> dict[str, Any]:
    """`fields` (status.Observed keyword arguments) with the condition added to `extra_conditions` when
    the service has blue-green, rolling-update or sequential groups."""
    if not cplan.grouped_components(isvc):
        return fields
    plan = cplan.plan(isvc, observe.members(reader, isvc, {}), now)
    found = cstatus.ready_condition(cstatus.groups_status(plan, None, now))
    if found is not None:
        extra = tuple(fields.get("extra_conditions") or ())
        fields = {**fields, "extra_conditions": (*extra, status.Cond(cstatus.CONDITION, *found))}
    return fields
