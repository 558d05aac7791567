"""Automatic relocation of an Instance that cannot run where it is (pure): migration-and-transient-scale.md.

Off unless `lifecycle.autoMigrate.maxAttempts` is set, and under `migrationPolicy.mode: Never`. Each pass:

    Failed (a Create that ran out of time, not for a workload cause such as an image that can't be pulled),
      every pod of the attempt on one node            --attempts left--> relocate
    Ready/Creating, a pod on a dead node (gone, or NotReady past the threshold) --attempts left--> relocate
    relocate: a `Relocated` record (trigger Auto, fromNode = the node left) in status.migrations, the row
      back to Pending at incarnation + 1 (the InferenceReplica planner rebuilds it), its pods deleted,
      AutoMigrationTriggered; the last attempt allowed also records AutoMigrationCapReached
    Ready again --> the Instance's open Relocated records close (succeeded), so its attempts start over
    Ready/Creating, a pod on a NotReady node short of the threshold --> wake_after: the time left

The rebuilt pods avoid every node the open Relocated records of their Instance name (`avoided_nodes`,
applied by `placement` when the InferenceReplica controller renders them).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from ome.omenative import migration_events as ev
from ome.omenative.pods_view import format_time, parse_time

Row = dict[str, Any]
Record = dict[str, Any]
Event = tuple[str, str, str]

RELOCATED: Final = "Relocated"
WORKLOAD_CAUSES: Final = frozenset({
    "ImagePullBackOff", "ErrImagePull", "CrashLoopBackOff", "CreateContainerConfigError", "InvalidImageName",
    "InvalidPodSpec", "CreateContainerError", "RunContainerError",
})
HOSTNAME: Final = "kubernetes.io/hostname"


@dataclass(frozen=True, slots=True)
class Inputs:
    replica_uid: str
    component: str
    records: Sequence[Record]
    rows: Sequence[Row]
    pods: Sequence[Mapping[str, Any]]
    """Raw (slim) pods of the replica: labels, spec.nodeName, status.phase."""
    nodes: Mapping[str, Mapping[str, Any] | None]
    """Node name -> Node (None: gone), for every node the pods name."""
    now: datetime
    max_attempts: int | None
    mode: str = "Auto"
    not_ready_threshold: float = 300.0


@dataclass(slots=True)
class Plan:
    records: list[Record] = field(default_factory=list)
    rows: dict[int, Row] = field(default_factory=dict)
    deletes: list[tuple[str, bool]] = field(default_factory=list)
    """(pod name, force: grace 0 since its node is dead)."""
    events: list[Event] = field(default_factory=list)
    changed: bool = False
    wake_after: float | None = None
    """Seconds until a NotReady node under a Ready/Creating Instance crosses the threshold."""


def open_records(records: Sequence[Record], index: int) -> list[Record]:
    return [r for r in records if r.get("phase") == RELOCATED and int(r.get("sourceInstance", -1)) == index
            and r.get("succeeded") is not True]


def avoided_nodes(status: Mapping[str, Any] | None, index: int) -> list[str]:
    """Nodes the Instance's open relocations left: its rebuilt pods must not use them."""
    records = (status or {}).get("migrations") or []
    return sorted({str(r["fromNode"]) for r in open_records(records, index) if r.get("fromNode")})


def placement(
    affinity: Mapping[str, Any] | None, avoid: Sequence[str], hints: Sequence[str] = ()
) -> dict[str, Any]:
    """A pod's affinity that never uses `avoid` (ANDed into each required term) and prefers `hints`."""
    out: dict[str, Any] = dict(affinity or {})
    node = dict(out.get("nodeAffinity") or {})
    if avoid:
        expr = {"key": HOSTNAME, "operator": "NotIn", "values": list(avoid)}
        required = dict(node.get("requiredDuringSchedulingIgnoredDuringExecution") or {})
        terms = [dict(t) for t in required.get("nodeSelectorTerms") or []] or [{}]
        for term in terms:
            term["matchExpressions"] = [*(term.get("matchExpressions") or []), expr]
        node["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}
    if hints:
        preferred = list(node.get("preferredDuringSchedulingIgnoredDuringExecution") or [])
        preferred.append({"weight": 100, "preference": {"matchExpressions": [
            {"key": HOSTNAME, "operator": "In", "values": list(hints)}]}})
        node["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    out["nodeAffinity"] = node
    return out


def dead(node: Mapping[str, Any] | None, now: datetime, threshold: float) -> bool:
    if node is None:
        return True
    left = dead_in(node, now, threshold)
    return left is not None and left <= 0


def ready_condition(node: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """A Node's `Ready` condition (None: none reported, or no node)."""
    conditions = ((node or {}).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == "Ready"), None)


def dead_in(node: Mapping[str, Any], now: datetime, threshold: float) -> float | None:
    """Seconds until a NotReady node counts as dead (<= 0: it does); None: Ready, or no time to count from."""
    ready = ready_condition(node)
    if ready is None or ready.get("status") == "True":
        return None
    since = parse_time(ready.get("lastTransitionTime"))
    return None if since is None else threshold - (now - since).total_seconds()


def plan(inp: Inputs) -> Plan:
    out = Plan(records=[dict(r) for r in inp.records])
    if inp.max_attempts is None or inp.max_attempts <= 0 or inp.mode == "Never":
        return out
    by_index: dict[int, list[Mapping[str, Any]]] = {}
    for pod in inp.pods:
        label = ((pod.get("metadata") or {}).get("labels") or {}).get("ome.io/instance-index")
        if label is not None and str(label).isdigit():
            by_index.setdefault(int(label), []).append(pod)
    for row in inp.rows:
        index = int(row["index"])
        pods = by_index.get(index, [])
        _wake_at_threshold(inp, out, row, pods)
        if row.get("phase") == "Ready" and not any(_on_dead_node(inp, p) for p in pods):
            _close(inp, out, index)
            continue
        node = _stuck_on(inp, row, pods)
        if node is None:
            continue
        used = len(open_records(out.records, index))
        if used >= inp.max_attempts:
            continue
        _relocate(inp, out, row, pods, node, used + 1)
    return out


def _wake_at_threshold(inp: Inputs, out: Plan, row: Row, pods: list[Mapping[str, Any]]) -> None:
    if row.get("phase") not in ("Ready", "Creating"):
        return
    for pod in pods:
        node = inp.nodes.get(str((pod.get("spec") or {}).get("nodeName") or ""))
        left = dead_in(node, inp.now, inp.not_ready_threshold) if node is not None else None
        if left is not None and left > 0:
            out.wake_after = left if out.wake_after is None else min(out.wake_after, left)


def _on_dead_node(inp: Inputs, pod: Mapping[str, Any]) -> bool:
    name = str((pod.get("spec") or {}).get("nodeName") or "")
    return bool(name) and dead(inp.nodes.get(name), inp.now, inp.not_ready_threshold)


def _stuck_on(inp: Inputs, row: Row, pods: list[Mapping[str, Any]]) -> str | None:
    """The one node the Instance should leave, or None."""
    on = {str(n) for p in pods if (n := (p.get("spec") or {}).get("nodeName"))}
    op = row.get("operation") or {}
    if row.get("phase") in ("Ready", "Creating") and op.get("type") not in ("Update", "Migrate", "Delete"):
        gone = sorted(n for n in on if dead(inp.nodes.get(n), inp.now, inp.not_ready_threshold))
        return gone[0] if gone else None
    if row.get("phase") != "Failed" or op.get("type") != "Create" or len(on) != 1:
        return None
    if (row.get("lastFailure") or {}).get("reason") in WORKLOAD_CAUSES:
        return None
    return next(iter(on))


def _relocate(
    inp: Inputs, out: Plan, row: Row, pods: list[Mapping[str, Any]], node: str, attempt: int
) -> None:
    index = int(row["index"])
    incarnation = int(row.get("incarnation") or 1) + 1
    now = format_time(inp.now)
    rid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"ome-relocate/{inp.replica_uid}/{index}/{incarnation}"))
    out.records.append({
        "requestUUID": rid, "trigger": "Auto", "sourceInstance": index, "fromNode": node, "phase": RELOCATED,
        "attempt": attempt, "reason": ev.AUTO_RECOVER, "startedAt": now, "deadline": now, "completedAt": now,
        "message": ev.relocation_record(node),
    })
    rebuilt = {k: v for k, v in row.items() if k not in ("operation", "readySince", "activeOrdinal")}
    rebuilt.update(phase="Pending", incarnation=incarnation)
    out.rows[index] = rebuilt
    force = dead(inp.nodes.get(node), inp.now, inp.not_ready_threshold)
    out.deletes += [(p["metadata"]["name"], force) for p in pods]
    cap = int(inp.max_attempts or 0)
    out.events.append((ev.NORMAL, ev.AUTO_TRIGGERED,
                       ev.auto_triggered(inp.component, index, attempt, cap, node, rid)))
    if attempt == cap:
        out.events.append((ev.WARNING, ev.AUTO_CAP, ev.auto_cap(inp.component, index, attempt, cap)))
    out.changed = True


def _close(inp: Inputs, out: Plan, index: int) -> None:
    for rec in out.records:
        if rec in open_records(out.records, index):
            rec["succeeded"] = True
            out.changed = True
