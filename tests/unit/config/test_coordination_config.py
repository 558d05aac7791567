"""`coordination` in inferenceservice-config: the default maintainRatio tolerance."""

from __future__ import annotations

import pytest

from ome.config import inferenceservice_config as isvc_config
from ome.config.inferenceservice_config import ConfigError


def test_default_is_the_charts_five() -> None:
    assert isvc_config.InferenceServiceConfig().coordination.default_ratio_tolerance_percent == 5


def test_configured_value_and_zero() -> None:
    config = isvc_config.parse({"coordination": '{"defaultRatioTolerancePercent": 12}'})
    assert config.coordination.default_ratio_tolerance_percent == 12
    zero = isvc_config.parse({"coordination": '{"defaultRatioTolerancePercent": 0, "trafficWeightDeadbandPercent": 0}'})
    assert zero.coordination.default_ratio_tolerance_percent == 0


def test_out_of_range_names_the_key() -> None:
    with pytest.raises(ConfigError, match="coordination.defaultRatioTolerancePercent"):
        isvc_config.parse({"coordination": '{"defaultRatioTolerancePercent": 101}'})
