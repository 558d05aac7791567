"""Selecting the InferenceReplicas and Warning events behind an InferenceService."""

from __future__ import annotations

from typing import Any

from ome.kubectl_ome.fetch import runtime_name_reported, select_replicas, warning_events

Obj = dict[str, Any]


def rep(name: str, component: str, parent: str | None = "chat") -> Obj:
    spec: Obj = {"component": component}
    if parent:
        spec["parentRef"] = {"name": parent}
    return {"metadata": {"name": name}, "spec": spec}


def isvc(refs: Obj | None = None) -> Obj:
    return {"metadata": {"name": "chat", "namespace": "prod"}, "spec": {"replicaRefs": refs} if refs else {}}


def test_owned_replicas_in_component_order() -> None:
    found = select_replicas(
        isvc(), [rep("chat-router", "router"), rep("chat-engine", "engine"), rep("x", "engine", "y")]
    )
    assert [(r.component, r.name, r.duplicate) for r in found.reads] == [
        ("engine", "chat-engine", False),
        ("router", "chat-router", False),
    ]
    assert found.summary == []


def test_replica_refs_missing_rejected_and_duplicates() -> None:
    items = [
        rep("pool-a", "engine", None),
        rep("pool-b", "decoder", None),
        rep("chat-engine", "engine"),
        rep("chat-engine-old", "engine"),
        rep("chat-decoder", "router"),
    ]
    found = select_replicas(isvc({"engine": ["pool-a", "pool-b", "pool-c"]}), items)
    assert [(r.component, r.name, r.replica is not None, r.duplicate) for r in found.reads] == [
        ("engine", "chat-engine", True, False),
        ("engine", "pool-a", True, False),
        ("engine", "pool-c", False, False),
        ("engine", "chat-engine-old", True, True),
    ]
    assert found.summary == ["REJECTED"]
    assert len(found.warnings) == 2


def test_warning_events_newest_first_for_targets_only() -> None:
    def ev(kind: str, name: str, when: str, type_: str = "Warning") -> Obj:
        return {
            "type": type_,
            "involvedObject": {"kind": kind, "name": name},
            "lastTimestamp": when,
            "reason": when,
        }

    events = [
        ev("Pod", "chat-engine-0-default-0", "2026-01-01T00:00:01Z"),
        ev("InferenceService", "chat", "2026-01-01T00:00:03Z"),
        ev("InferenceService", "chat", "2026-01-01T00:00:04Z", "Normal"),
        ev("InferenceService", "other", "2026-01-01T00:00:05Z"),
    ]
    kept = warning_events(events, {("InferenceService", "chat"), ("Pod", "chat-engine-0-default-0")})
    assert [e["reason"] for e in kept] == ["2026-01-01T00:00:03Z", "2026-01-01T00:00:01Z"]


def test_runtime_name_reported() -> None:
    cond = {"type": "RuntimeReady", "status": "True", "message": 'runtime "vllm" resolved'}
    assert runtime_name_reported({"status": {"conditions": [cond]}}) == "vllm"
    assert runtime_name_reported({"status": {}}) is None
