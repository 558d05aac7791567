"""The `coordination` key of `inferenceservice-config` (rollout-groups.md, Rolling update):
`defaultRatioTolerancePercent`, the `maintainRatio.tolerance` of a group that sets none (0 to 100; the
chart's `ome.controller.coordination.defaultRatioTolerancePercent`, 5), and
`trafficWeightDeadbandPercent` (accepted; OME writes no per-revision traffic weights for these groups)."""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_RATIO_TOLERANCE: Final = 5


class CoordinationConfig(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="allow", frozen=True)

    default_ratio_tolerance_percent: int = Field(
        default=DEFAULT_RATIO_TOLERANCE, ge=0, le=100, alias="defaultRatioTolerancePercent"
    )
    traffic_weight_deadband_percent: int = Field(
        default=0, ge=0, le=100, alias="trafficWeightDeadbandPercent"
    )
