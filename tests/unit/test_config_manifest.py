"""The shipped inferenceservice-config parses and carries the chart defaults the docs state."""

from __future__ import annotations

from pathlib import Path

import yaml

from ome.config import inferenceservice_config

MANIFEST = Path(__file__).resolve().parents[2] / "config" / "configmap" / "inferenceservice-config.yaml"


def test_shipped_config_parses_with_documented_defaults() -> None:
    data = yaml.safe_load(MANIFEST.read_text())["data"]
    config = inferenceservice_config.parse(data)
    assert config.deploy.termination_grace_period_seconds == 600
    assert config.lifecycle.instance_ready_timeout == "30m"
    assert config.lifecycle.update_retry is not None and config.lifecycle.update_retry.max_attempts == 3
    assert config.lifecycle.revision_history_limit == 10
    assert config.omenative_status.status_encoding == "ColumnarV2"
    assert config.ingress.disable_ingress_creation is True
    engine = config.deploy.update_strategy.for_component("engine")
    assert engine is not None and engine.type == "SurgeThenDrain"
    assert (engine.max_surge, engine.max_unavailable) == ("25%", "25%")
