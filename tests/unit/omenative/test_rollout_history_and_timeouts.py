"""Operator settings of the rollout's neighbours: revision history with no limit set keeps every
revision, and an operator `instanceReadyTimeout: 0s` counts as unset (docs: update strategies,
set-instance-readiness-deadlines)."""

from __future__ import annotations

from ome.cmd import wiring
from ome.config import inferenceservice_config as cfg
from ome.controllers.inferencereplica.reconciler import InferenceReplicaReconciler
from ome.omenative import revisions
from ome.omenative.settings import InferenceReplicaSettings


def _settings(lifecycle: str) -> wiring.Settings:
    config = cfg.parse({"lifecycle": lifecycle})
    return wiring.Settings(config, lws_served=False, config_namespace="ome", pod_monitor_served=False)


def _revision(name: str, number: int) -> dict[str, object]:
    return {"metadata": {"name": name}, "revision": number}


def test_an_operator_zero_ready_timeout_is_unset_and_starts_the_manager() -> None:
    s = _settings('{"instanceReadyTimeout": "0s"}')
    assert s.replica_settings().instance_ready_timeout is None  # used to raise at startup
    assert s.rollout_settings().instance_ready_timeout in (None, 0.0)


def test_a_component_zero_ready_timeout_falls_back_to_the_operator_default() -> None:
    reconciler = InferenceReplicaReconciler(
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        InferenceReplicaSettings(instance_ready_timeout=600.0),
    )
    replica = {"spec": {"lifecycle": {"instanceReadyTimeout": "0s"}}}
    assert reconciler._ready_timeout(replica) == 600.0  # noqa: SLF001 - not 0: Instances would fail at once


def test_with_no_history_limit_every_revision_is_kept() -> None:
    s = _settings('{"revisionHistoryLimit": null}')
    assert s.replica_settings().revision_history_limit is None
    existing = [_revision(f"r{i}", i) for i in range(1, 30)]
    assert revisions.prunable(existing, live={"r29"}, limit=None) == []
    assert len(revisions.prunable(existing, live={"r29"}, limit=10)) == 18


def test_a_lifecycle_entry_without_the_limit_keeps_every_revision() -> None:
    """The docs: with neither the chart's value nor the annotation set, OME keeps every revision."""
    assert _settings("{}").replica_settings().revision_history_limit is None
    assert _settings('{"revisionHistoryLimit": 10}').replica_settings().revision_history_limit == 10
