"""BenchmarkJob status follows the Job (benchmarks.md, "Status")."""

from __future__ import annotations

from typing import Any

from ome.controllers.benchmarkjob import states

Obj = dict[str, Any]


def job(**status: Any) -> Obj:
    return {"metadata": {"name": "b"}, "status": status}


def test_pending_without_a_job_once() -> None:
    # "Pending: OME hasn't created the Job, or the Job was deleted."
    assert states.status_patch({}, None, "T0") == {"state": "Pending", "startTime": None, "completionTime": None,
                                                   "failureMessage": None, "lastReconcileTime": "T0"}
    assert states.status_patch({"state": "Pending"}, None, "T1") is None


def test_running_then_completed() -> None:
    # "startTime ... It can be empty while the state is Running."
    assert states.status_patch({"state": "Pending"}, job(), "T1") == {
        "state": "Running", "lastReconcileTime": "T1", "completionTime": None, "failureMessage": None}
    running = {"state": "Running", "lastReconcileTime": "T1"}
    assert states.status_patch(running, job(startTime="S"), "T2") == {"startTime": "S"}
    running["startTime"] = "S"
    assert states.status_patch(running, job(startTime="S", active=1), "T3") is None  # no-op: no write
    done = job(startTime="S", completionTime="C", conditions=[{"type": "Complete", "status": "True"}])
    assert states.status_patch(running, done, "T4") == {"state": "Completed", "lastReconcileTime": "T4",
                                                        "completionTime": "C", "failureMessage": None}


def test_failed_carries_the_condition_message() -> None:
    failed = job(startTime="S", conditions=[{"type": "Failed", "status": "True", "lastTransitionTime": "F",
                                             "reason": "BackoffLimitExceeded",
                                             "message": "Job has reached the specified backoff limit"}])
    patch = states.status_patch({"state": "Running", "startTime": "S"}, failed, "T5")
    assert patch == {"state": "Failed", "lastReconcileTime": "T5", "completionTime": "F",
                     "failureMessage": "Job has reached the specified backoff limit"}


def test_deleted_job_returns_to_pending_and_clears() -> None:
    done = {"state": "Completed", "startTime": "S", "completionTime": "C"}
    assert states.status_patch(done, None, "T6") == {"state": "Pending", "startTime": None, "completionTime": None,
                                                     "failureMessage": None, "lastReconcileTime": "T6"}
