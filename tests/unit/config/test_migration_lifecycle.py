"""lifecycle.audit, autoMigrate and forceDelete (ome/config/migration_lifecycle.py): a value of the wrong JSON
type stops the manager's start with the documented lifecycle error; an unusable value of the right type turns
the feature off."""

from __future__ import annotations

import pytest

from ome.config import inferenceservice_config as cfg


def _error(entry: str) -> str:
    with pytest.raises(cfg.ConfigError) as info:
        cfg.parse({"lifecycle": entry})
    return str(info.value)


@pytest.mark.parametrize(("entry", "field"), [
    ('{"forceDelete": {"overdueSlack": 120, "nodeUnreachableThreshold": "5m"}}', "forceDelete.overdueSlack"),
    ('{"forceDelete": {"overdueSlack": "2m", "nodeUnreachableThreshold": 300}}',
     "forceDelete.nodeUnreachableThreshold"),
    ('{"audit": {"maxMigrationsPerWindow": 10, "window": 3600, "maxInFlightMigrations": 3}}', "audit.window"),
    ('{"audit": {"maxMigrationsPerWindow": "10", "window": "1h", "maxInFlightMigrations": 3}}',
     "audit.maxMigrationsPerWindow"),
    ('{"autoMigrate": {"maxAttempts": "3"}}', "autoMigrate.maxAttempts"),
])
def test_a_bare_number_duration_or_a_text_count_stops_the_start(entry: str, field: str) -> None:
    """recover-stuck-deletions.md: "Give each duration a unit: a bare number, like `120`, stops the new manager
    pods from starting", which then exit "with `Failed to initialize lifecycle scale configuration`"."""
    message = _error(entry)
    assert message.startswith("Failed to initialize lifecycle scale configuration: "
                              "unable to parse lifecycle config json: ")
    assert f"lifecycle.{field}" in message


@pytest.mark.parametrize("block", [
    {"overdueSlack": "120", "nodeUnreachableThreshold": "5m"},  # no unit
    {"overdueSlack": "0s", "nodeUnreachableThreshold": "5m"},
    {"overdueSlack": "2m"},  # both are needed
])
def test_an_unusable_force_delete_block_turns_the_escalation_off(block: dict[str, str]) -> None:
    """"The escalation is on when both `forceDelete` durations are set and valid"; an invalid block is logged
    only at debug verbosity, so the manager starts."""
    import json

    life = cfg.parse({"lifecycle": json.dumps({"forceDelete": block})}).lifecycle
    assert life.force_delete() is None
    assert life.force_delete_block is not None and life.force_delete_block.problem() is not None


def test_the_documented_values_are_read() -> None:
    life = cfg.parse({"lifecycle": '{"forceDelete": {"overdueSlack": "2m", "nodeUnreachableThreshold": "5m"}, '
                                   '"audit": {"maxInFlightMigrations": 3, "maxMigrationsPerWindow": 10, '
                                   '"window": "1h"}, "autoMigrate": {"maxAttempts": 3}}'}).lifecycle
    assert life.force_delete() == (120.0, 300.0) and life.force_delete_block is not None
    assert life.force_delete_block.problem() is None
    assert life.migration_caps() == (10, 3600.0, 3)
    assert life.auto_migrate_attempts() == 3
    # unset, or a cap not above zero: requests wait and relocation is off, without stopping the start
    unset = cfg.parse({"lifecycle": '{"audit": {"maxMigrationsPerWindow": 0, "window": "1h", '
                                    '"maxInFlightMigrations": 3}, "autoMigrate": {"maxAttempts": 0}}'}).lifecycle
    assert unset.migration_caps() is None and unset.auto_migrate_attempts() is None and unset.force_delete() is None


def test_the_manager_logs_an_unusable_force_delete_block_at_debug() -> None:
    """recover-stuck-deletions.md: "The `forceDelete` block isn't valid | ... OME logs a bad block only at debug
    verbosity"."""
    from structlog.testing import capture_logs

    from ome.cmd.wiring import Settings

    config = cfg.parse({"lifecycle": '{"forceDelete": {"overdueSlack": "120", "nodeUnreachableThreshold": "5m"}}'})
    with capture_logs() as logs:
        settings = Settings(config, lws_served=False, config_namespace="ome").migration_settings()
    assert settings.force_delete is None
    assert [(e["log_level"], e["reason"]) for e in logs if "forceDelete" in e["event"]] == [
        ("debug", "lifecycle.forceDelete.overdueSlack '120' is not a duration above zero with a unit")]
    good = cfg.parse({"lifecycle": '{"forceDelete": {"overdueSlack": "2m", "nodeUnreachableThreshold": "5m"}}'})
    with capture_logs() as logs:
        assert Settings(good, lws_served=False, config_namespace="ome").migration_settings().force_delete == (
            120.0, 300.0)
    assert not [e for e in logs if "forceDelete" in e["event"]]
