"""What an Instance waits on, and when a wait earns a log line."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ome.omenative import waits
from ome.omenative.revisions import RevisionData, RunnerSpec
from tests.unit.omenative.builders import pod

T0 = datetime(2026, 1, 1, tzinfo=UTC)
GANG = RevisionData(runners=(RunnerSpec("leader", 1, {}), RunnerSpec("worker", 2, {})))


def test_restart_waits_for_the_previous_incarnation_then_for_its_new_pods() -> None:
    row = {"index": 0, "incarnation": 2, "phase": "Restarting"}
    old = [pod("g-0-leader-0", incarnation=1), pod("g-0-worker-1", incarnation=1, gate="False", ready=False)]
    assert waits.waiting_on(row, old, GANG) == "pods of the previous incarnation to leave rotation: g-0-leader-0"
    gone = [pod("g-0-leader-0", incarnation=1, terminating=True)]
    assert waits.waiting_on(row, gone, GANG) == "pods of the previous incarnation to terminate: g-0-leader-0"
    assert waits.waiting_on(row, [], GANG) == "pod creations to be observed (0/3 pods exist)"
    new = [pod(n, incarnation=2, phase="Pending") for n in ("g-0-leader-0", "g-0-worker-0", "g-0-worker-1")]
    assert waits.waiting_on(row, new, GANG) == "pods to run: g-0-leader-0, g-0-worker-0, g-0-worker-1"


def test_ready_waits_on_nothing_and_deleting_on_its_drain() -> None:
    assert waits.waiting_on({"index": 0, "incarnation": 1, "phase": "Ready"}, [], GANG) is None
    deleting = {"index": 0, "incarnation": 1, "phase": "Deleting"}
    assert waits.waiting_on(deleting, [pod("p")], GANG) == "pods to leave rotation: p"
    assert waits.waiting_on(deleting, [pod("p", terminating=True)], GANG) == "pods to terminate: p"


def test_a_wait_is_logged_after_it_lasted_then_every_period_and_anew_when_it_changes() -> None:
    log = waits.WaitLog(after=10, every=300)
    due, wake = log.update("r", {0: "pods to run: p"}, T0)
    assert due == [] and wake == 10.0
    due, wake = log.update("r", {0: "pods to run: p"}, T0 + timedelta(seconds=10))
    assert due == [waits.Due(0, "pods to run: p", T0)] and wake == 300.0
    due, _ = log.update("r", {0: "pods to run: p"}, T0 + timedelta(seconds=100))
    assert due == []
    due, _ = log.update("r", {0: "pods to run: p"}, T0 + timedelta(seconds=310))
    assert [d.reason for d in due] == ["pods to run: p"]
    later = T0 + timedelta(seconds=320)
    due, wake = log.update("r", {0: "containers to be ready: p"}, later)  # a new wait starts its own clock
    assert due == [] and wake == 10.0
    assert log.update("r", {}, later) == ([], None)  # nothing waits: nothing is due


def test_a_wait_added_by_a_pass_held_before_planning_keeps_the_instances_clocks() -> None:
    log = waits.WaitLog(after=10, every=300)
    log.update("r", {0: "pods to run: p"}, T0)
    due, _ = log.add("r", "cache", "the cache to show our write", T0 + timedelta(seconds=5))
    assert due == []
    # The Instance's wait still dates from T0: due at T0 + 10 s, not restarted by the held pass.
    due, _ = log.add("r", "cache", "the cache to show our write", T0 + timedelta(seconds=10))
    assert due == [waits.Due(0, "pods to run: p", T0)]
    # A full pass replaces the set: the held pass's wait is gone once the Instances are planned again,
    # so a later hold starts its own clock (from T0 + 5 s it would be due now).
    due, _ = log.update("r", {0: "pods to run: p"}, T0 + timedelta(seconds=12))
    assert due == []
    due, wake = log.add("r", "cache", "the cache to show our write", T0 + timedelta(seconds=20))
    assert due == [] and wake == 10.0
