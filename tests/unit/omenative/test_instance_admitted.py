"""The Instance row's `admitted` flag (the `A` of `kubectl ome instance list`'s AOF column).

An Instance is admitted when it has its pods and none of them waits on a scheduling gate; issue 22
item 4: a Ready Instance printed `---` because the row never carried the flag.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ome.kubectl_ome.instances import aof
from ome.omenative.instances import Context, counted
from ome.omenative.pods_view import view

NOW = datetime(2026, 9, 1, tzinfo=UTC)
CTX = Context(
    base="chat", component="engine", desired=1, update_revision="chat-engine-abc", update_hash="abc",
    revisions={}, now=NOW, ready_timeout=None, drain_timeout=60.0,
)
ROW: dict[str, Any] = {"index": 0, "incarnation": 1, "phase": "Ready", "runningRevision": "chat-engine-abc"}


def pod(name: str, *, gates: list[dict[str, str]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "ome-container"}], "nodeName": "gpu-node-0"}
    if gates:
        spec["schedulingGates"] = gates
    return {
        "metadata": {"name": name, "labels": {"ome.io/instance-index": "0", "ome.io/instance-incarnation": "1",
                                              "ome.io/revision-hash": "abc", "ome.io/runner": "default"}},
        "spec": spec,
        "status": {"phase": "Running", "podIP": "10.0.0.1", "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-08-31T00:00:00Z"},
            {"type": "ContainersReady", "status": "True"},
            {"type": "ome.io/serving", "status": "True"}]},
    }


def views(*pods: dict[str, Any]) -> list[Any]:
    out = [view(p) for p in pods]
    assert all(v is not None for v in out)
    return out


def test_a_ready_instance_with_its_pods_is_admitted() -> None:
    row = counted(CTX, dict(ROW), views(pod("chat-engine-0-default-0")), None)
    assert row["admitted"] is True
    assert aof(row) == "A--"


def test_a_gated_pod_or_no_pod_is_not_admitted() -> None:
    gated = counted(CTX, dict(ROW), views(pod("p0", gates=[{"name": "ome.io/quota"}])), None)
    assert "admitted" not in gated and aof(gated) == "---"
    empty = counted(CTX, {**ROW, "admitted": True}, [], None)  # a stale flag is recomputed, not kept
    assert "admitted" not in empty
