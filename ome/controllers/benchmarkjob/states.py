"""BenchmarkJob state machine: `status` follows the Job (benchmarks.md, "Status"). Pure.

States and transitions:
  (none)    -> Pending    the BenchmarkJob is first seen without a Job
  Pending   -> Running    the Job exists and has not finished
  Running   -> Completed  the Job succeeded (completionTime, or a Complete=True condition)
  Running   -> Failed     the Job has Failed=True (failureMessage: that condition's message)
  any       -> Pending    the Job was deleted (times and message cleared; OME creates a new Job)
`lastReconcileTime` is when the state last changed; `startTime` is the Job's, and may be empty while
Running until the Job reports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

Obj = dict[str, Any]
PENDING: Final = "Pending"
RUNNING: Final = "Running"
COMPLETED: Final = "Completed"
FAILED: Final = "Failed"


def _true(job: Mapping[str, Any], type_: str) -> Obj | None:
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_ and cond.get("status") == "True":
            return dict(cond)
    return None


def job_state(job: Mapping[str, Any]) -> tuple[str, str | None, str | None]:
    """(state, completion time, failure message) the Job stands for."""
    if failed := _true(job, "Failed"):
        return FAILED, failed.get("lastTransitionTime"), failed.get("message") or None
    completion = (job.get("status") or {}).get("completionTime")
    if completion:
        return COMPLETED, completion, None
    if complete := _true(job, "Complete"):
        return COMPLETED, complete.get("lastTransitionTime"), None
    return RUNNING, None, None


def status_patch(old: Mapping[str, Any] | None, job: Mapping[str, Any] | None, now: str) -> Obj | None:
    """The merge patch of `status` (None values delete), or None when the stored status stands."""
    old = old or {}
    if job is None:
        if old.get("state") == PENDING:
            return None
        return {"state": PENDING, "startTime": None, "completionTime": None, "failureMessage": None,
                "lastReconcileTime": now}
    state, completion, message = job_state(job)
    started = (job.get("status") or {}).get("startTime")
    if old.get("state") == state:
        # Only the Job's start time can still arrive (it may be empty when the Job is first seen).
        return {"startTime": started} if started and not old.get("startTime") else None
    patch: Obj = {"state": state, "lastReconcileTime": now}
    if started and not old.get("startTime"):
        patch["startTime"] = started
    if state == RUNNING:
        patch |= {"completionTime": None, "failureMessage": None}
    else:
        patch |= {"completionTime": completion, "failureMessage": message}
    return patch


__all__ = ["COMPLETED", "FAILED", "PENDING", "RUNNING", "job_state", "status_patch"]
