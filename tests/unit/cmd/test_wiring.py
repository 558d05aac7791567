"""Settings the manager derives from inferenceservice-config for the InferenceReplica controller."""

from __future__ import annotations

import pytest

from ome.cmd import wiring
from ome.config import inferenceservice_config as cfg


def _settings(lifecycle: str) -> wiring.Settings:
    config = cfg.parse({"lifecycle": lifecycle})
    return wiring.Settings(config, lws_served=False, config_namespace="ome", pod_monitor_served=True)


def test_lifecycle_entry_reaches_the_replica_settings() -> None:
    s = _settings('{"instanceReadyTimeout": "45m", "teardown": {"deadline": "1h30m"},'
                  ' "updateRetry": {"initialDelay": "30s", "maxDelay": "10m", "multiplier": 3}}')
    replica = s.replica_settings()
    assert replica.instance_ready_timeout == 2700
    assert replica.teardown_deadline == 5400
    assert (replica.retry_initial_delay, replica.retry_max_delay, replica.retry_multiplier) == (30, 600, 3)
    assert replica.pod_monitor_served is True


def test_no_teardown_deadline_holds_the_finalizer() -> None:
    assert _settings('{"instanceReadyTimeout": "30m"}').replica_settings().teardown_deadline is None


def test_bad_teardown_deadline_is_a_startup_error() -> None:
    with pytest.raises(cfg.ConfigError, match="teardown.deadline"):
        cfg.parse({"lifecycle": '{"teardown": {"deadline": "soon"}}'})
