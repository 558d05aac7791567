"""The fault suite's invariant checks (ome/devcluster/chaos.py) catch what they are there to catch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ome.devcluster.chaos import GANG, AuditTrail, Service, duplicates, orphans, service_state

Obj = dict[str, Any]


def _audit(path: Path, *events: tuple[str, str, str, str, int]) -> None:
    """(user, verb, resource, second, code) lines as the apiserver writes them."""
    with path.open("a") as f:
        for user, verb, resource, second, code in events:
            ts = f"2026-12-03T13:00:{second}Z"
            f.write(json.dumps({"user": {"username": user}, "verb": verb,
                                "objectRef": {"resource": resource, "namespace": "ns",
                                              "name": "chaos" if resource == "leases" else "x"},
                                "requestReceivedTimestamp": ts, "stageTimestamp": ts,
                                "responseStatus": {"code": code}}) + "\n")


def test_a_write_by_a_manager_that_does_not_hold_the_lease_is_a_violation(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    _audit(log,
           ("m-0", "create", "pods", "00.5", 201),  # before anyone led
           ("m-0", "update", "leases", "01", 200),
           ("m-0", "create", "pods", "02", 201),  # m-0 leads
           ("m-1", "create", "pods", "02.5", 201),  # a standby writes
           ("m-1", "update", "leases", "03", 200),
           ("m-0", "patch", "pods", "04", 200),  # the deposed leader writes
           ("m-0", "patch", "pods", "04.5", 409),  # refused: not a write
           ("m-1", "patch", "pods", "05", 200),
           ("m-2", "patch", "mutatingwebhookconfigurations", "05", 200),  # every replica registers
           ("admin", "delete", "pods", "06", 200))  # fmt: skip
    trail = AuditTrail(log, "m-")
    assert trail.holder("chaos") == "m-1"
    got = [(w.user, w.verb, w.received.second, w.received.microsecond) for w in trail.violations("chaos")]
    assert got == [("m-0", "create", 0, 500000), ("m-1", "create", 2, 500000), ("m-0", "patch", 4, 0)]


def _pod(name: str, *, index: str = "0", incarnation: str = "1", owner: str | None = "ir-uid",
         deleting: bool = False, isvc: str = "gang-2") -> Obj:
    meta: Obj = {"name": name, "uid": f"uid-{name}", "labels": {
        "ome.io/inferenceservice": isvc, "component": "engine", "ome.io/managed-by": "OMENative",
        "ome.io/instance-index": index, "ome.io/runner": "leader", "ome.io/pod-ordinal": "0",
        "ome.io/instance-incarnation": incarnation}}
    if owner:
        meta["ownerReferences"] = [{"uid": owner, "kind": "InferenceReplica", "name": "gang-2-engine"}]
    if deleting:
        meta["deletionTimestamp"] = "2026-12-03T13:00:00Z"
    return {"metadata": meta, "spec": {"containers": [{"image": "vllm/vllm-openai:v0.9.1"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}


def test_two_live_pods_of_one_instance_incarnation_are_a_duplicate() -> None:
    assert duplicates([_pod("a"), _pod("b")]) == 1
    assert duplicates([_pod("a"), _pod("b", deleting=True)]) == 0
    assert duplicates([_pod("a"), _pod("b", incarnation="2"), _pod("c", index="1")]) == 0


def test_children_without_a_live_owner_are_orphans() -> None:
    replica: Obj = {"metadata": {"name": "gang-2-engine", "uid": "ir-uid",
                            "ownerReferences": [{"uid": "isvc-uid"}]}}
    isvc: Obj = {"metadata": {"name": "gang-2", "uid": "isvc-uid"}}
    objects: dict[str, list[Obj]] = {"InferenceService": [isvc], "InferenceReplica": [replica],
               "Pod": [_pod("ok"), _pod("stale", owner="gone-uid"), _pod("none", owner=None),
                       _pod("leaving", owner="gone-uid", deleting=True)]}
    assert orphans(objects) == ["Pod/none", "Pod/stale"]
    assert orphans({**objects, "InferenceService": []}) == ["InferenceReplica/gang-2-engine", "Pod/none",
                                                            "Pod/stale"]


def test_a_service_converges_with_exactly_its_pods_ready_on_its_image() -> None:
    svc = Service("gang-2", GANG, tag=1)
    isvc: Obj = {"metadata": {"generation": 2}, "status": {"observedGeneration": 2,
                                                      "conditions": [{"type": "Ready", "status": "True"}]}}
    pods = [_pod(f"p{i}") for i in range(3)]
    assert service_state(svc, isvc, pods) is None
    assert service_state(svc, isvc, pods[:2]) == "2 live of 2 pods, want 3"
    assert service_state(svc, {**isvc, "status": {**isvc["status"], "observedGeneration": 1}}, pods) is not None
    svc.tag = 2
    assert service_state(svc, isvc, pods) == "images ['vllm/vllm-openai:v0.9.1'], want vllm/vllm-openai:v0.9.2"
