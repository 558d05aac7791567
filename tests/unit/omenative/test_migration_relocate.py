"""Automatic relocation (ome.omenative.migration_relocate): triggers, attempts, the cap and node avoidance."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from ome.omenative import migration_relocate as mr
from ome.omenative.pods_view import format_time

NOW = datetime(2026, 9, 28, 10, 0, tzinfo=UTC)
Obj = dict[str, Any]


def pod(index: int, node: str) -> Obj:
    return {"metadata": {"name": f"chat-engine-{index}-default-0", "labels": {"ome.io/instance-index": str(index)}},
            "spec": {"nodeName": node}, "status": {"phase": "Running"}}


def node(ready: str = "True", since: float = 3600) -> Obj:
    return {"status": {"conditions": [{"type": "Ready", "status": ready,
                                       "lastTransitionTime": format_time(NOW - timedelta(seconds=since))}]}}


def failed_row(index: int = 0, reason: str = "DeadlineExceeded") -> Obj:
    return {"index": index, "incarnation": 1, "phase": "Failed", "runningRevision": "r",
            "operation": {"type": "Create", "step": "CreatePods"}, "lastFailure": {"reason": reason}}


def inputs(rows: list[Obj], pods: list[Obj], nodes: dict[str, Obj | None], records: list[Obj] | None = None,
           **kw: Any) -> mr.Inputs:
    base: dict[str, Any] = dict(replica_uid="u", component="engine", records=records or [], rows=rows, pods=pods,
                                nodes=nodes, now=NOW, max_attempts=3)
    base.update(kw)
    return mr.Inputs(**base)


def test_a_timed_out_instance_on_one_node_is_relocated_and_avoids_it() -> None:
    out = mr.plan(inputs([failed_row()], [pod(0, "gpu-node-1")], {"gpu-node-1": node()}))
    assert out.rows[0]["phase"] == "Pending" and out.rows[0]["incarnation"] == 2 and "operation" not in out.rows[0]
    assert out.deletes == [("chat-engine-0-default-0", False)]
    [rec] = out.records
    assert (rec["phase"], rec["trigger"], rec["fromNode"], rec["attempt"]) == ("Relocated", "Auto", "gpu-node-1", 1)
    assert rec["reason"] == "AutoRecover"
    assert rec["message"] == "relocation directive recorded; rebuild steered off node gpu-node-1"
    assert out.events == [("Normal", "AutoMigrationTriggered",
                           "OMENative component=engine instance=0 relocation directive recorded: attempt 1/3, "
                           f"rebuild steered off node gpu-node-1 (uuid={rec['requestUUID']})")]
    assert mr.avoided_nodes({"migrations": out.records}, 0) == ["gpu-node-1"]
    affinity = mr.placement(None, ["gpu-node-1"])
    term = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert term["matchExpressions"] == [{"key": "kubernetes.io/hostname", "operator": "NotIn",
                                         "values": ["gpu-node-1"]}]


def test_a_workload_fault_or_never_or_no_setting_does_not_relocate() -> None:
    pods, nodes = [pod(0, "gpu-node-1")], {"gpu-node-1": node()}
    assert not mr.plan(inputs([failed_row(reason="ImagePullBackOff")], pods, nodes)).changed
    assert not mr.plan(inputs([failed_row()], pods, nodes, mode="Never")).changed
    assert not mr.plan(inputs([failed_row()], pods, nodes, max_attempts=None)).changed


def test_a_running_instance_on_a_gone_or_long_not_ready_node_moves_with_forced_deletes() -> None:
    ready = {"index": 0, "incarnation": 1, "phase": "Ready", "runningRevision": "r"}
    out = mr.plan(inputs([ready], [pod(0, "gpu-node-1")], {"gpu-node-1": None}))
    assert out.deletes == [("chat-engine-0-default-0", True)] and out.records[0]["fromNode"] == "gpu-node-1"
    late = mr.plan(inputs([ready], [pod(0, "gpu-node-1")], {"gpu-node-1": node("Unknown", 400)}))
    assert late.changed
    early = mr.plan(inputs([ready], [pod(0, "gpu-node-1")], {"gpu-node-1": node("Unknown", 100)}))
    assert not early.changed


def test_the_last_attempt_records_the_cap_and_then_relocation_stops_until_ready() -> None:
    records = [{"requestUUID": f"r{i}", "phase": "Relocated", "sourceInstance": 0, "fromNode": f"n{i}"}
               for i in range(2)]
    out = mr.plan(inputs([failed_row()], [pod(0, "gpu-node-1")], {"gpu-node-1": node()}, records))
    assert [e[1] for e in out.events] == ["AutoMigrationTriggered", "AutoMigrationCapReached"]
    assert out.events[0][2].startswith("OMENative component=engine instance=0 relocation directive recorded: "
                                       "attempt 3/3, rebuild steered off node gpu-node-1 (uuid=")
    assert out.events[1] == ("Warning", "AutoMigrationCapReached",
                             "OMENative component=engine instance=0 relocation budget exhausted (3/3 attempts); "
                             "further expiries dispose terminal without relocation")
    assert mr.avoided_nodes({"migrations": out.records}, 0) == ["gpu-node-1", "n0", "n1"]
    again = mr.plan(inputs([failed_row()], [pod(0, "gpu-node-2")], {"gpu-node-2": node()}, out.records))
    assert not again.changed
    # Ready again: the attempts close and start over
    ready = {"index": 0, "incarnation": 4, "phase": "Ready", "runningRevision": "r"}
    closed = mr.plan(inputs([ready], [pod(0, "gpu-node-2")], {"gpu-node-2": node()}, out.records))
    assert closed.changed and all(r["succeeded"] for r in closed.records)
    assert mr.avoided_nodes({"migrations": closed.records}, 0) == []


def test_a_node_not_ready_short_of_the_threshold_wakes_the_pass_when_it_crosses_it() -> None:
    rows = [{"index": 0, "incarnation": 1, "phase": "Ready"}, {"index": 1, "incarnation": 1, "phase": "Creating"}]
    pods = [pod(0, "gpu-node-1"), pod(1, "gpu-node-2")]
    nodes = {"gpu-node-1": node("False", since=100), "gpu-node-2": node("Unknown", since=250)}
    out = mr.plan(inputs(rows, pods, nodes, not_ready_threshold=300.0))
    assert not out.changed and out.wake_after == 50.0  # the sooner of the two
    later = mr.plan(inputs(rows, pods, nodes, not_ready_threshold=300.0, now=NOW + timedelta(seconds=50)))
    assert later.changed and [r["fromNode"] for r in later.records] == ["gpu-node-2"]
    assert later.wake_after == 150.0
    assert mr.plan(inputs(rows, pods, {"gpu-node-1": node(), "gpu-node-2": node()})).wake_after is None
    assert mr.plan(inputs(rows, pods, nodes, mode="Never")).wake_after is None
