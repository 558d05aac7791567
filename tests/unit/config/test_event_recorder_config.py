"""`eventRecorder` in inferenceservice-config: the manager's per-object event budget."""

from __future__ import annotations

import pytest

from ome.config import inferenceservice_config as cfg
from ome.framework.events import EventBudget


def test_a_full_entry_sets_both_fields() -> None:
    entry = cfg.parse({"eventRecorder": '{"burstSize": 400, "refillInterval": "5s"}'}).event_recorder
    assert (entry.burst_size, entry.refill_interval) == (400, "5s")
    assert entry.budget() == EventBudget(burst=400, refill_interval=5.0)


@pytest.mark.parametrize(("data", "expected"), [
    ({}, EventBudget(25, 300.0)),
    ({"eventRecorder": "{}"}, EventBudget(25, 300.0)),
    ({"eventRecorder": '{"burstSize": 7}'}, EventBudget(7, 300.0)),
    ({"eventRecorder": '{"refillInterval": "1m30s", "burstSize": null}'}, EventBudget(25, 90.0)),
], ids=["no-entry", "empty", "burst-only", "interval-only"])
def test_a_field_left_out_keeps_client_gos_value(data: dict[str, str], expected: EventBudget) -> None:
    assert cfg.parse(data).event_recorder.budget() == expected


def test_left_out_fields_are_none() -> None:
    entry = cfg.parse({"eventRecorder": '{"burstSize": null}'}).event_recorder
    assert (entry.burst_size, entry.refill_interval) == (None, None)


@pytest.mark.parametrize(("entry", "field"), [
    ('{"burstSize": 0}', "burstSize"),
    ('{"burstSize": -5}', "burstSize"),
    ('{"burstSize": 2.5}', "burstSize"),
    ('{"burstSize": "400"}', "burstSize"),
    ('{"refillInterval": "0s"}', "refillInterval"),
    ('{"refillInterval": "0"}', "refillInterval"),
    ('{"refillInterval": "-2s"}', "refillInterval"),
    ('{"refillInterval": "soon"}', "refillInterval"),
    ('{"refillInterval": 5}', "refillInterval"),
])
def test_a_bad_field_is_a_config_error_naming_it(entry: str, field: str) -> None:
    with pytest.raises(cfg.ConfigError) as info:
        cfg.parse({"eventRecorder": entry})
    assert f"eventRecorder.{field}" in str(info.value)


def test_an_entry_that_is_not_a_json_object_is_a_config_error() -> None:
    with pytest.raises(cfg.ConfigError, match="eventRecorder"):
        cfg.parse({"eventRecorder": "[400]"})
