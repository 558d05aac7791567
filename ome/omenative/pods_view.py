"""What the planner reads from an owned pod: identity labels and readiness facts (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from ome.framework import timefmt
from ome.framework.timefmt import format_time as format_time  # re-exported for the omenative modules
from ome.omenative import instance_names as names

TERMINAL_WAITING_REASONS: Final = frozenset({
    "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError",
    "CreateContainerError", "CrashLoopBackOff", "RunContainerError",
})
"""Kubelet waiting reasons a container never leaves on its own (v1.3's terminalWaitingReasons): the one set
the stuck-pod failure, the crash-loop repair and a migration's wedged surge read."""


@dataclass(frozen=True, slots=True)
class Wedge:
    """A container (or init container) waiting in one of `TERMINAL_WAITING_REASONS`."""

    container: str
    reason: str
    message: str | None = None


@dataclass(frozen=True, slots=True)
class PodView:
    name: str
    index: int
    runner: str
    incarnation: int
    revision_hash: str
    phase: str
    terminating: bool
    containers_ready: bool
    gate: str | None
    """Status of the ome.io/serving condition: "True", "False" or None when never set."""
    ready: bool
    ready_since: str | None
    has_ip: bool
    restarted_at: str | None
    """When the main container last terminated (restartCount > 0), else None."""
    restart_reason: str | None = None
    exit_code: int | None = None
    container: str | None = None
    gated: bool = False
    """The pod still has a scheduling gate (it is not admitted to scheduling yet)."""
    created: str | None = None
    """metadata.creationTimestamp: the stuck-pod grace runs from it (a waiting state has no time)."""
    wedged: Wedge | None = None
    """The first container, then init container, waiting in a terminal reason."""
    unschedulable_since: str | None = None
    """lastTransitionTime of PodScheduled False for Unschedulable, else None."""
    unschedulable_message: str | None = None
    """The scheduler's message with `unschedulable_since` (which constraint found no node)."""

    @property
    def ended(self) -> bool:
        return self.phase in ("Failed", "Succeeded")

    @property
    def serving(self) -> bool:
        return self.gate == "True" and self.ready and not self.terminating

    @property
    def drained(self) -> bool:
        """Out of rotation: its gate is False and Ready followed, or it never ran."""
        if self.phase != "Running":
            return True
        return self.gate == "False" and not self.ready


def _conditions(pod: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {c.get("type", ""): c for c in (pod.get("status") or {}).get("conditions") or []}


def view(pod: Mapping[str, Any]) -> PodView | None:
    """None for a pod without OMENative identity labels (not ours to plan)."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    try:
        index = int(labels[names.INSTANCE_INDEX_LABEL])
        incarnation = int(labels.get(names.INCARNATION_LABEL) or 0)
    except (KeyError, ValueError):
        return None
    status = pod.get("status") or {}
    conds = _conditions(pod)
    ready = conds.get("Ready") or {}
    scheduled = conds.get("PodScheduled") or {}
    unschedulable = scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable"
    main = _main_status(status)
    last = ((main or {}).get("lastState") or {}).get("terminated") or {}
    restarted = bool(main and int(main.get("restartCount") or 0) > 0)
    return PodView(
        name=meta["name"],
        index=index,
        runner=labels.get(names.RUNNER_LABEL, "default"),
        incarnation=incarnation,
        revision_hash=labels.get(names.REVISION_HASH_LABEL, ""),
        phase=status.get("phase") or "Pending",
        terminating=bool(meta.get("deletionTimestamp")),
        containers_ready=(conds.get("ContainersReady") or {}).get("status") == "True",
        gate=(conds.get(names.SERVING_GATE) or {}).get("status"),
        ready=ready.get("status") == "True",
        ready_since=ready.get("lastTransitionTime") if ready.get("status") == "True" else None,
        has_ip=bool(status.get("podIP")),
        restarted_at=(last.get("finishedAt") or "") if restarted else None,
        restart_reason=last.get("reason"),
        exit_code=last.get("exitCode"),
        container=(main or {}).get("name"),
        gated=bool((pod.get("spec") or {}).get("schedulingGates")),
        created=meta.get("creationTimestamp"),
        wedged=_wedge(status),
        unschedulable_since=scheduled.get("lastTransitionTime") if unschedulable else None,
        unschedulable_message=scheduled.get("message") if unschedulable else None,
    )


def _wedge(status: Mapping[str, Any]) -> Wedge | None:
    # Containers before init containers, as v1.3 reads them.
    for cs in [*(status.get("containerStatuses") or []), *(status.get("initContainerStatuses") or [])]:
        waiting = (cs.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in TERMINAL_WAITING_REASONS:
            return Wedge(cs.get("name") or "", waiting["reason"], waiting.get("message") or None)
    return None


def _main_status(status: Mapping[str, Any]) -> Mapping[str, Any] | None:
    statuses = status.get("containerStatuses") or []
    main = next((s for s in statuses if s.get("name") == "ome-container"), None)
    return main or (statuses[0] if statuses else None)


def parse_time(value: str | None) -> datetime | None:
    return timefmt.parse_time(value) if value else None


def go_duration(seconds: float) -> str:
    """Whole seconds the way Go prints a time.Duration: "42s", "4m12s", "1h0m0s"."""
    total = max(int(seconds), 0)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"
