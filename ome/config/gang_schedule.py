"""lifecycle.gangScheduleTimeout: the `min` and `max` that bound a PodGroup's `scheduleTimeoutSeconds`
(concepts/serving/gang-scheduling.md).

A value that does not decode (not an object, a bare number for a duration) fails the whole `lifecycle`
entry at start, as every typed lifecycle field does. A block that decodes but is unusable (a bound
missing, zero or negative, without a unit, or `min` above `max`) counts as unset, as documented.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, StrictStr, model_validator

from ome.config.durations import is_duration, parse_duration


class GangScheduleTimeoutConfig(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="allow", frozen=True)

    min: StrictStr | None = None
    max: StrictStr | None = None

    @model_validator(mode="before")
    @classmethod
    def _object(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            raise ValueError(f"lifecycle.gangScheduleTimeout must be an object with min and max durations "
                             f"(such as {{\"min\": \"60s\", \"max\": \"600s\"}}), got {value!r}")
        return value

    def clamp(self) -> tuple[float, float] | None:
        """(min, max) seconds, or None (unset) unless both are durations above zero and min <= max."""
        low, high = _positive_seconds(self.min), _positive_seconds(self.max)
        if low is None or high is None or low > high:
            return None
        return low, high


def _positive_seconds(value: str | None) -> float | None:
    if value is None or value == "0" or not is_duration(value):
        return None
    seconds = parse_duration(value)
    return seconds if seconds is not None and seconds > 0 else None


__all__ = ["GangScheduleTimeoutConfig"]
