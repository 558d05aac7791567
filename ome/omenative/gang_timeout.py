"""A PodGroup's `scheduleTimeoutSeconds` (concepts/serving/gang-scheduling.md). Pure.

The component's ready timeout (its `instanceReadyTimeout`, else the operator's), clamped between the `min`
and `max` of `lifecycle.gangScheduleTimeout`: a ready timeout above `max` gives `max`, below `min` or unset
gives `min`. Without the clamp the ready timeout itself; with neither, no value (the scheduler's own
default applies).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any


def schedule_timeout_seconds(ready_timeout: float | None, clamp: tuple[float, float] | None) -> int | None:
    if clamp is None:
        return None if ready_timeout is None else _whole(ready_timeout)
    low, high = clamp
    if ready_timeout is None or ready_timeout < low:
        return _whole(low)
    return _whole(min(ready_timeout, high))


def _whole(seconds: float) -> int:
    return max(math.ceil(seconds), 1)




def timeout_patches(
    groups: Iterable[Mapping[str, Any]], want: int | None
) -> list[tuple[str, dict[str, Any]]]:
    """(name, merge patch) for each existing PodGroup whose `scheduleTimeoutSeconds` is not `want`
    ("OME updates existing PodGroups to the new timeout"); None removes the field."""
    return [
        (group["metadata"]["name"], {"spec": {"scheduleTimeoutSeconds": want}})
        for group in groups
        if (group.get("spec") or {}).get("scheduleTimeoutSeconds") != want
    ]


__all__ = ["schedule_timeout_seconds", "timeout_patches"]
