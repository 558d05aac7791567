"""The `eventRecorder` key of `inferenceservice-config`: the manager's per-object event budget.

`burstSize` (a positive integer) and `refillInterval` (a positive Go duration such as "5s"). The chart
writes the entry from `ome.controller.eventRecorder`; a field left out keeps client-go's value
(`ome.framework.events.EventBudget`). Read once, when the manager starts.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ome.config.durations import parse_duration
from ome.framework.events import EventBudget


class EventRecorderConfig(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="allow", frozen=True)

    burst_size: int | None = Field(default=None, alias="burstSize")
    refill_interval: str | None = Field(default=None, alias="refillInterval")

    @field_validator("burst_size", mode="before")
    @classmethod
    def _positive_burst(cls, value: Any) -> Any:
        # Strict, as a Go int field: no booleans, fractions or numeric strings.
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise ValueError(f"must be a positive integer, got {value!r}")
        return value

    @field_validator("refill_interval", mode="before")
    @classmethod
    def _positive_interval(cls, value: Any) -> Any:
        if value is not None and (not isinstance(value, str) or (parse_duration(value) or 0) <= 0):
            raise ValueError(f"must be a positive duration such as 2s or 5m, got {value!r}")
        return value

    def budget(self) -> EventBudget:
        """The effective budget: client-go's value for each field left out."""
        default = EventBudget()
        interval = parse_duration(self.refill_interval) if self.refill_interval is not None else None
        return EventBudget(
            burst=self.burst_size if self.burst_size is not None else default.burst,
            refill_interval=interval if interval is not None else default.refill_interval,
        )
