"""Teardown of a deleted InferenceReplica (pure): the finalizer and what each pass decides.

While a replica lives, the controller keeps the finalizer `ome.io/ir-teardown` on it. Once it is
deleted, every Instance is planned away as on a scale-down to zero (drain, then delete the pods), and
the finalizer comes off when no owned pod remains. Nothing here is remembered between passes: each
pass reads the deletionTimestamp, the pods and the status rows, so a crash or a restart resumes.

A deleted replica never waits forever on a controller that is gone for long:
- the teardown deadline (operator setting, 30m in the chart) counts from the deletionTimestamp, so a
  controller that comes back after it releases the finalizer at once, and the garbage collector takes
  the pods, which keep their owner references throughout;
- every teardown warning carries the manual escape, a merge patch that clears the finalizers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from ome.omenative import instance_names as names
from ome.omenative.pods_view import go_duration, parse_time

FINALIZER: Final = "ome.io/ir-teardown"
BLOCKED: Final = "TeardownBlocked"
DEADLINE_EXCEEDED: Final = "TeardownDeadlineExceeded"
POLL_SECONDS: Final = 10.0
"""How often a teardown with pods left looks again when no pod event arrives."""


def finalizers(obj: Mapping[str, Any]) -> list[str]:
    return list((obj.get("metadata") or {}).get("finalizers") or [])


def has_finalizer(obj: Mapping[str, Any]) -> bool:
    return FINALIZER in finalizers(obj)


def deleting(obj: Mapping[str, Any]) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def add_patch(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A merge patch adding the finalizer, conditional on the resourceVersion read."""
    rv = obj["metadata"]["resourceVersion"]
    return {"metadata": {"finalizers": [*finalizers(obj), FINALIZER], "resourceVersion": rv}}


def on_create(desired: dict[str, Any], live: Mapping[str, Any] | None) -> dict[str, Any]:
    """`desired` (a replica its creator applies) with the finalizer, so that the replica controller's
    first pass has no finalizer patch to make: one write and one replica event fewer per replica. The
    finalizer is a set item of the creator's apply; the replica controller still puts it back should it
    go, and takes it off at teardown. Left out while a replica that no longer has it is being deleted:
    the apiserver refuses a new finalizer on an object being deleted."""
    if live is not None and deleting(live) and not has_finalizer(live):
        return desired
    meta = dict(desired.get("metadata") or {})
    meta["finalizers"] = [*[f for f in meta.get("finalizers") or [] if f != FINALIZER], FINALIZER]
    return {**desired, "metadata": meta}


def remove_patch(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A merge patch dropping only our finalizer; the resourceVersion makes a racing edit conflict."""
    kept = [f for f in finalizers(obj) if f != FINALIZER]
    return {"metadata": {"finalizers": kept or None, "resourceVersion": obj["metadata"]["resourceVersion"]}}


def deadline_at(obj: Mapping[str, Any], deadline: float | None) -> datetime | None:
    since = parse_time((obj.get("metadata") or {}).get("deletionTimestamp"))
    if since is None or deadline is None:
        return None
    return since + timedelta(seconds=deadline)


@dataclass(frozen=True, slots=True)
class Decision:
    release: bool
    """Remove the finalizer now."""
    event: tuple[str, str] | None = None
    """(reason, message) of a Warning to record on the replica."""
    requeue_after: float | None = None


def decide(
    obj: Mapping[str, Any], *, pods_left: int, groups_left: int, deadline: float | None, now: datetime
) -> Decision:
    """Release once nothing owned is left, or at the deadline; otherwise wait (and say so when no
    deadline will ever end the wait)."""
    at = deadline_at(obj, deadline)
    if at is not None and now > at:
        return Decision(True, (DEADLINE_EXCEEDED, exceeded_message(obj, deadline or 0.0, pods_left)))
    if pods_left == 0 and groups_left == 0:
        return Decision(True)
    wait = POLL_SECONDS if at is None else min(POLL_SECONDS, max((at - now).total_seconds() + 1.0, 0.5))
    if deadline is None:
        return Decision(False, (BLOCKED, blocked_message(obj, pods_left, groups_left)), wait)
    return Decision(False, None, wait)


def _selector(obj: Mapping[str, Any]) -> str:
    component = (obj.get("spec") or {}).get("component", "")
    return f'selector: parent="{names.base_name(obj)}", component="{component}"'


def escape_hint(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    return (
        f"manual escape: kubectl patch inferencereplica {meta['name']} -n {meta['namespace']} "
        """--type=merge -p '{"metadata":{"finalizers":null}}'"""
    )


def exceeded_message(obj: Mapping[str, Any], deadline: float, pods_left: int) -> str:
    return (
        f"teardown deadline {go_duration(deadline)} exceeded ({pods_left} owned pod(s) observed; "
        f"{_selector(obj)}); releasing finalizer {FINALIZER} to background GC; {escape_hint(obj)}"
    )


def blocked_message(obj: Mapping[str, Any], pods_left: int, groups_left: int) -> str:
    return (
        f"teardown blocked: {pods_left} owned pod(s) and {groups_left} owned PodGroup(s) remain "
        f"({_selector(obj)}); finalizer {FINALIZER} holds until cleanup completes "
        f"(no lifecycle.teardown.deadline configured); {escape_hint(obj)}"
    )
