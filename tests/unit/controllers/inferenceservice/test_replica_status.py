"""What an InferenceService mirrors from an InferenceReplica: lifecycle, scale target, the ready condition."""

from __future__ import annotations

from typing import Any

import pytest

from ome.controllers.inferenceservice import replica_status

Obj = dict[str, Any]


def replica(total: int, ready: int, serving: int, *, desired: int | None = None, budget: Any = None) -> Obj:
    spec: Obj = {"component": "engine"}
    if desired is not None:
        spec["replicas"] = desired
    if budget is not None:
        spec["lifecycle"] = {"updateStrategy": {"rollingUpdate": {"maxUnavailable": budget}}}
    return {"spec": spec, "status": {"replicas": total, "readyReplicas": ready, "servingReplicas": serving}}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (replica(2, 2, 2), ("True", "Ready", "All Instances are Ready")),
        (replica(2, 1, 1), ("False", "InsufficientAvailable", "1/2 Instances serving, need 2")),
        # 25% of 10 Instances is 3 (a percentage rounds up).
        (replica(10, 9, 9, budget="25%"), ("True", "MinimumAvailable", "9/10 Instances serving (min 7)")),
        (
            replica(10, 6, 6, budget="25%"),
            ("False", "InsufficientAvailable", "6/10 Instances serving, need 7"),
        ),
        (replica(10, 8, 8, budget=2), ("True", "MinimumAvailable", "8/10 Instances serving (min 8)")),
        # A surge runs more Instances than desired: the minimum follows the desired count.
        (
            replica(32, 16, 16, desired=16, budget="25%"),
            ("True", "MinimumAvailable", "16/32 Instances serving (min 12)"),
        ),
        # Scaling up: the minimum is of the Instances that exist.
        (
            replica(8, 6, 6, desired=16, budget="25%"),
            ("True", "MinimumAvailable", "6/8 Instances serving (min 6)"),
        ),
        (replica(0, 0, 0), ("False", "NoReplicas", "Component has no desired Instances")),
        ({"spec": {}}, ("False", "NoReplicas", "Component has no desired Instances")),
    ],
    ids=["ready", "strict", "percent", "percent-short", "int", "surge", "scale-up", "zero", "no-status"],
)
def test_readiness_follows_the_counts(obj: Obj, expected: tuple[str, str, str]) -> None:
    assert replica_status.readiness(obj) == expected


def test_pacing_budget_is_the_fallback() -> None:
    obj = replica(4, 3, 3)
    obj["spec"]["pacing"] = {"maxUnavailable": 1}
    assert replica_status.readiness(obj)[1] == "MinimumAvailable"


def test_lifecycle_mirrors_counts_revisions_and_hold_but_not_rows_or_generation() -> None:
    status: Obj = {
        "observedGeneration": 7,
        "replicas": 2,
        "readyReplicas": 1,
        "servingReplicas": 1,
        "availableReplicas": 1,
        "updatedReplicas": 2,
        "updatedReadyReplicas": 1,
        "currentRevision": "pool-engine-aaa",
        "updateRevision": "pool-engine-bbb",
        "labelSelector": "ome.io/inferenceservice=pool,component=engine,ome.io/managed-by=OMENative",
        "rolloutHold": {"gate": "Budget", "reason": "maxUnavailable", "since": "2026-01-01T00:00:00Z"},
        "instanceStatuses": [{"index": 0}],
        "conditions": [{"type": "Ready", "status": "True", "reason": "MinimumAvailable", "message": "m"}],
    }
    mirrored = replica_status.lifecycle({"status": status})
    assert "observedGeneration" not in mirrored and "instanceStatuses" not in mirrored
    assert mirrored["currentRevision"] == "pool-engine-aaa" and mirrored["updatedReadyReplicas"] == 1
    assert mirrored["rolloutHold"]["gate"] == "Budget" and mirrored["conditions"] == status["conditions"]
    mirrored["conditions"][0]["status"] = "False"
    assert status["conditions"][0]["status"] == "True"  # a copy, never the cached object
    assert replica_status.lifecycle({}) == {}


def test_scale_target_is_the_replica() -> None:
    assert replica_status.scale_target_ref("pool") == {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceReplica",
        "name": "pool",
    }
