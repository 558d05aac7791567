"""Which writer's entries an apply of the InferenceService's atomic conditions list takes from where."""

from __future__ import annotations

from typing import Any

from ome.controllers import shared_conditions as sc

Obj = dict[str, Any]


def c(type_: str, reason: str) -> Obj:
    return {"type": type_, "status": "True", "reason": reason}


OURS = [c("EngineReady", "new"), c("Ready", "new"), c("RolloutPlanDrift", "old"), c("RolloutPlanReady", "old")]
SNAPSHOT = [c("EngineReady", "seen"), c("Ready", "seen"), c("RolloutPlanReady", "seen")]


def test_the_inferenceservice_controller_takes_the_run_entries_from_the_snapshot() -> None:
    # A run entry the snapshot no longer has (RolloutPlanDrift) is not put back either.
    assert sc.rebase(OURS, SNAPSHOT, run_controller=False) == [
        c("EngineReady", "new"), c("Ready", "new"), c("RolloutPlanReady", "seen")]


def test_the_run_controller_takes_every_other_entry_from_the_snapshot() -> None:
    assert sc.rebase(OURS, SNAPSHOT, run_controller=True) == [
        c("EngineReady", "seen"), c("Ready", "seen"), c("RolloutPlanDrift", "old"), c("RolloutPlanReady", "old")]


def test_a_service_is_shared_while_it_has_groups_a_run_or_run_entries() -> None:
    assert not sc.shared({"spec": {}}, {"conditions": [c("Ready", "x")]})
    assert sc.shared({"spec": {"rollout": {"groups": [{"components": ["engine"]}]}}}, {})
    assert sc.shared({"spec": {}}, {"rollout": {"activeRun": {"runID": "r1"}}})
    assert sc.shared({"spec": {}}, {"conditions": [c("RolloutPlanDrift", "InSync")]})


def test_the_precondition_names_the_snapshot_and_an_unknown_version_sends_none() -> None:
    body = {"metadata": {"name": "chat", "namespace": "prod"}, "status": {}}
    assert sc.precondition(body, "42")["metadata"] == {"name": "chat", "namespace": "prod", "resourceVersion": "42"}
    assert sc.precondition(body, None) is body
    assert "resourceVersion" not in body["metadata"]
