"""Force-delete escalation (ome.omenative.force_delete): evidence rules and the documented messages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ome.config.inferenceservice_config import LifecycleConfig
from ome.omenative import force_delete as fd
from ome.omenative.pods_view import format_time

NOW = datetime(2026, 9, 28, 10, 14, 3, tzinfo=UTC)
SETTINGS = fd.Settings(overdue_slack=120.0, node_unreachable_threshold=300.0)
Obj = dict[str, Any]


def pod(deleted_ago: float | None = 161.0, finalizers: list[str] | None = None, phase: str = "Running") -> Obj:
    meta: Obj = {"name": "qwen3-0-6b-engine-0-default-0", "uid": "p-1"}
    if deleted_ago is not None:
        meta["deletionTimestamp"] = format_time(NOW - timedelta(seconds=deleted_ago))
    if finalizers:
        meta["finalizers"] = finalizers
    return {"metadata": meta, "spec": {"nodeName": "gpu-node-3"}, "status": {"phase": phase}}


def node(ready: str = "Unknown", since: float = 600.0, taint_since: float | None = None) -> Obj:
    body: Obj = {"metadata": {"name": "gpu-node-3"}, "spec": {},
                 "status": {"conditions": [{"type": "Ready", "status": ready,
                                            "lastTransitionTime": format_time(NOW - timedelta(seconds=since))}]}}
    if taint_since is not None:
        body["spec"]["taints"] = [{"key": fd.UNREACHABLE_TAINT, "effect": "NoExecute",
                                   "timeAdded": format_time(NOW - timedelta(seconds=taint_since))}]
    return body


def test_taint_evidence_and_the_documented_message() -> None:
    decision, _ = fd.decide(pod(), node(since=10, taint_since=400), "engine", 0, NOW, SETTINGS)
    assert decision == fd.Decision(
        fd.FORCE,
        "OMENative component=engine instance=0: force-deleted stuck-Terminating pod qwen3-0-6b-engine-0-default-0 "
        "on node gpu-node-3 (evidence=node-unreachable-taint, 2m41s past the pod's own deletion deadline)",
        "node-unreachable-taint",
    )


@pytest.mark.parametrize(
    ("the_node", "found"),
    [(None, "node-gone"), (node("Unknown", 400), "node-not-ready"), (node("False", 301), "node-not-ready")],
)
def test_each_piece_of_evidence(the_node: Obj | None, found: str) -> None:
    decision, _ = fd.decide(pod(), the_node, "engine", 0, NOW, SETTINGS)
    assert decision is not None and decision.action == fd.FORCE and decision.evidence == found


def test_no_evidence_no_force() -> None:
    # Ready True: never dead, whatever its taints
    assert fd.decide(pod(), node("True", taint_since=900), "engine", 0, NOW, SETTINGS) == (None, None)
    # NotReady for less than the threshold: look again when it would count
    decision, wait = fd.decide(pod(), node("Unknown", 100), "engine", 0, NOW, SETTINGS)
    assert decision is None and wait == pytest.approx(200)


def test_within_the_slack_waits() -> None:
    decision, wait = fd.decide(pod(deleted_ago=60), None, "engine", 0, NOW, SETTINGS)
    assert decision is None and wait is not None and 60 <= wait <= 61


def test_finalizers_block_with_the_documented_message() -> None:
    decision, _ = fd.decide(pod(deleted_ago=185, finalizers=["example.com/cleanup"]), None, "engine", 0, NOW,
                            SETTINGS)
    assert decision == fd.Decision(
        fd.BLOCKED,
        "OMENative component=engine instance=0: pod qwen3-0-6b-engine-0-default-0 is 3m5s past its own deletion "
        "deadline but pinned by finalizers [example.com/cleanup]; OME never strips another controller's finalizer "
        "— the finalizer owner must resolve it",
    )


def test_node_unknown_pod_is_force_deleted_once_its_node_is_dead() -> None:
    unknown = pod(deleted_ago=None, phase="Unknown")
    decision, _ = fd.decide(unknown, node("Unknown", 400), "engine", 0, NOW, SETTINGS)
    assert decision is not None and "held in phase Unknown" in decision.message
    assert fd.decide(pod(deleted_ago=None), None, "engine", 0, NOW, SETTINGS) == (None, None)


@pytest.mark.parametrize(
    ("block", "expected"),
    [({"overdueSlack": "2m", "nodeUnreachableThreshold": "5m"}, (120.0, 300.0)),
     ({"overdueSlack": "2m"}, None), ({"overdueSlack": "0s", "nodeUnreachableThreshold": "5m"}, None),
     ({"overdueSlack": "120", "nodeUnreachableThreshold": "5m"}, None)],  # no unit: off (a bare number fails)
)
def test_force_delete_is_on_only_with_both_durations(block: Obj, expected: Any) -> None:
    assert LifecycleConfig.model_validate({"forceDelete": block}).force_delete() == expected
