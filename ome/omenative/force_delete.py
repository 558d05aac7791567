"""Force-delete escalation for OMENative pods stuck on dead nodes (pure): recover-stuck-deletions.md.

On only when both `lifecycle.forceDelete` durations (`overdueSlack`, `nodeUnreachableThreshold`) are
set. A `Terminating` pod is force-deleted (grace 0) when it is more than `overdueSlack` past its
`deletionTimestamp`, has no finalizers, and its node is dead by one piece of evidence:

    node-gone               the Node object is gone
    node-unreachable-taint  node.kubernetes.io/unreachable for at least nodeUnreachableThreshold
    node-not-ready          Ready False/Unknown for at least nodeUnreachableThreshold

A node whose Ready condition is True is never dead. Past the slack with finalizers: one
PodDeleteBlockedByFinalizer warning, and OME never strips them. A pod in phase `Unknown` that is not
Terminating (NodeUnknown) is force-deleted once its node is dead, with `held in phase Unknown`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from ome.omenative.migration_relocate import ready_condition
from ome.omenative.pods_view import go_duration, parse_time

UNREACHABLE_TAINT: Final = "node.kubernetes.io/unreachable"
FORCE, BLOCKED = "PodForceDeleted", "PodDeleteBlockedByFinalizer"


@dataclass(frozen=True, slots=True)
class Settings:
    overdue_slack: float
    node_unreachable_threshold: float


@dataclass(frozen=True, slots=True)
class Decision:
    action: str
    """FORCE or BLOCKED."""
    message: str
    evidence: str = ""


def evidence(
    node: Mapping[str, Any] | None, now: datetime, threshold: float
) -> tuple[str | None, float | None]:
    """(evidence, None) when the node is dead; else (None, seconds until it could count, or None)."""
    if node is None:
        return "node-gone", None
    ready = ready_condition(node)
    if ready is not None and ready.get("status") == "True":
        return None, None
    wait: float | None = None
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("key") == UNREACHABLE_TAINT:
            since = parse_time(taint.get("timeAdded"))
            if since is not None:
                left = threshold - (now - since).total_seconds()
                if left <= 0:
                    return "node-unreachable-taint", None
                wait = left
    if ready is not None and ready.get("status") in ("False", "Unknown"):
        since = parse_time(ready.get("lastTransitionTime"))
        if since is not None:
            left = threshold - (now - since).total_seconds()
            if left <= 0:
                return "node-not-ready", None
            wait = left if wait is None else min(wait, left)
    return None, wait


def decide(
    pod: Mapping[str, Any], node: Mapping[str, Any] | None, component: str, index: int, now: datetime,
    settings: Settings,
) -> tuple[Decision | None, float | None]:
    """What to do with one pod now, and when to look again (seconds) if nothing yet."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    name, node_name = meta.get("name", ""), spec.get("nodeName") or ""
    who = f"OMENative component={component} instance={index}:"
    deleted = parse_time(meta.get("deletionTimestamp"))
    if deleted is None:
        if (pod.get("status") or {}).get("phase") != "Unknown" or not node_name:
            return None, None
        found, wait = evidence(node, now, settings.node_unreachable_threshold)
        if found is None:
            return None, wait
        return Decision(FORCE, f"{who} force-deleted pod {name} held in phase Unknown on node {node_name} "
                               f"(evidence={found})", found), None
    overdue = (now - deleted).total_seconds()
    if overdue <= settings.overdue_slack:
        return None, settings.overdue_slack - overdue + 0.5
    finalizers = list(meta.get("finalizers") or [])
    if finalizers:
        pinned = " ".join(finalizers)
        return Decision(BLOCKED, f"{who} pod {name} is {go_duration(overdue)} past its own deletion deadline "
                                 f"but pinned by finalizers [{pinned}]; OME never strips another "
                                 "controller's finalizer — the finalizer owner must resolve it"), None
    if not node_name:
        return None, None
    found, wait = evidence(node, now, settings.node_unreachable_threshold)
    if found is None:
        return None, wait
    return Decision(FORCE, f"{who} force-deleted stuck-Terminating pod {name} on node {node_name} "
                           f"(evidence={found}, {go_duration(overdue)} past the pod's own deletion deadline)",
                    found), None
