"""ome.io/reset-instances (ome.omenative.instance_reset): outcomes and the documented event texts."""

from __future__ import annotations

from typing import Any

from ome.omenative import instance_reset as ir
from tests.unit.omenative import builders

SUBJECT = "InferenceReplica qwen3-native/qwen3-0-6b-engine"
Row = dict[str, Any]


def row(index: int, phase: str = "Failed", op: str | None = "Create") -> Row:
    out: Row = {"index": index, "incarnation": 1, "phase": phase, "runningRevision": "r-abc"}
    if op:
        out["operation"] = {"type": op, "step": "CreatePods"}
    return out


def pod(index: int, serving: bool = False, terminating: bool = False) -> Any:
    return builders.pod(f"qwen3-0-6b-engine-{index}-default-0", index=index, gate="True" if serving else "False",
                        ready=serving, containers_ready=serving, terminating=terminating)


def test_a_failed_instance_is_reset_with_the_documented_text() -> None:
    out = ir.plan(SUBJECT, "engine", "0", [row(0), row(1, "Ready", None)], [pod(0), pod(1, serving=True)])
    assert out.rows == {0: {"index": 0, "incarnation": 1, "phase": "Failed", "runningRevision": "r-abc"}}
    assert out.deletes == ["qwen3-0-6b-engine-0-default-0"]
    assert out.events == [(
        "Normal", "InstancesReset",
        "InferenceReplica qwen3-native/qwen3-0-6b-engine component=engine: reset instance(s) 0 at operator "
        "request (ome.io/reset-instances annotation): pods deleted and preserved operation cleared; the lifecycle "
        "passes rebuild them",
    )]


def test_still_serving_is_skipped_with_the_documented_text() -> None:
    out = ir.plan(SUBJECT, "engine", "0", [row(0)], [pod(0, serving=True)])
    assert not out.rows and not out.deletes
    assert out.events == [(
        "Normal", "InstancesResetSkipped",
        "InferenceReplica qwen3-native/qwen3-0-6b-engine component=engine: reset skipped for instance(s) 0 "
        "(still serving)",
    )]


def test_every_skip_reason() -> None:
    rows = [row(0, "Updating", "Update"), row(1, "Migrating", "Migrate"), row(2, "Deleting", "Delete"),
            row(3, "Ready", None), row(4, "Failed", None)]
    out = ir.plan(SUBJECT, "engine", "0,1,2,3,4,9", rows, [])
    assert out.events[0][2].endswith(
        "reset skipped for instance(s) 0 (owned by Update), 1 (owned by Migrate), 2 (owned by Delete), "
        "3 (Phase=Ready), 4 (nothing to reset), 9 (no such instance)"
    )


def test_all_resets_every_failed_instance_and_says_when_none_is() -> None:
    out = ir.plan(SUBJECT, "engine", "all", [row(0), row(1, "Ready", None), row(2)], [pod(0), pod(2)])
    assert sorted(out.rows) == [0, 2] and "reset instance(s) 0,2 at operator request" in out.events[0][2]
    none = ir.plan(SUBJECT, "engine", "all", [row(1, "Ready", None)], [])
    assert none.events == [("Normal", "InstancesResetSkipped",
                            f"{SUBJECT} component=engine: none is Failed; nothing to reset")]


def test_anything_else_is_rejected_quoting_the_value() -> None:
    out = ir.plan(SUBJECT, "engine", "All", [row(0)], [pod(0)])
    assert not out.rows and not out.deletes
    assert out.events == [(
        "Warning", "InstancesResetRejected",
        'InferenceReplica qwen3-native/qwen3-0-6b-engine component=engine: ome.io/reset-instances="All" rejected: '
        '"All" is not a non-negative instance index; nothing reset',
    )]
    assert ir.plan(SUBJECT, "engine", "0,-1", [row(0)], []).events[0][1] == "InstancesResetRejected"
