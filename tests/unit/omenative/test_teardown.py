from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ome.omenative import teardown
from ome.omenative.pods_view import go_duration
from tests.unit.omenative.builders import replica

DELETED = datetime(2026, 1, 1, tzinfo=UTC)


def deleted(**meta: object) -> dict:
    body = replica()
    body["metadata"].update(
        deletionTimestamp="2026-01-01T00:00:00Z",
        finalizers=["x.io/a", teardown.FINALIZER],
        resourceVersion="7",
    )
    body["metadata"].update(meta)
    return body


def test_go_durations() -> None:
    assert [go_duration(s) for s in (0, 42, 252, 1800, 3600, 3725)] == [
        "0s", "42s", "4m12s", "30m0s", "1h0m0s", "1h2m5s",
    ]  # fmt: skip


def test_finalizer_patches_keep_other_finalizers_and_are_conditional() -> None:
    body = deleted()
    assert teardown.remove_patch(body) == {"metadata": {"finalizers": ["x.io/a"], "resourceVersion": "7"}}
    body["metadata"]["finalizers"] = [teardown.FINALIZER]
    assert teardown.remove_patch(body)["metadata"]["finalizers"] is None  # merge patch: drop the field
    live = replica()
    live["metadata"]["resourceVersion"] = "3"
    assert teardown.add_patch(live) == {
        "metadata": {"finalizers": [teardown.FINALIZER], "resourceVersion": "3"}
    }


def test_release_once_nothing_is_left() -> None:
    decision = teardown.decide(deleted(), pods_left=0, groups_left=0, deadline=1800.0, now=DELETED)
    assert decision.release and decision.event is None


def test_wait_while_pods_are_left_and_wake_by_the_deadline() -> None:
    now = DELETED + timedelta(minutes=29, seconds=55)
    decision = teardown.decide(deleted(), pods_left=2, groups_left=0, deadline=1800.0, now=now)
    assert not decision.release and decision.event is None
    assert decision.requeue_after is not None and decision.requeue_after <= 10.0


def test_release_past_the_deadline_counted_from_the_deletion() -> None:
    now = DELETED + timedelta(hours=1, seconds=1)
    decision = teardown.decide(deleted(), pods_left=1, groups_left=0, deadline=3600.0, now=now)
    assert decision.release
    assert decision.event == (
        "TeardownDeadlineExceeded",
        'teardown deadline 1h0m0s exceeded (1 owned pod(s) observed; selector: parent="chat", '
        'component="engine"); releasing finalizer ome.io/ir-teardown to background GC; manual escape: '
        "kubectl patch inferencereplica chat-engine -n ns --type=merge -p "
        """'{"metadata":{"finalizers":null}}'""",
    )


def test_without_a_deadline_the_hold_says_how_to_escape() -> None:
    decision = teardown.decide(deleted(), pods_left=1, groups_left=0, deadline=None, now=DELETED)
    assert not decision.release and decision.event is not None
    reason, message = decision.event
    assert reason == "TeardownBlocked"
    assert message.startswith(
        'teardown blocked: 1 owned pod(s) and 0 owned PodGroup(s) remain (selector: parent="chat", '
        'component="engine"); finalizer ome.io/ir-teardown holds until cleanup completes '
        "(no lifecycle.teardown.deadline configured); manual escape: kubectl patch inferencereplica"
    )


def test_a_replica_is_created_with_the_finalizer_its_controller_would_add() -> None:
    desired = replica()
    desired["metadata"]["finalizers"] = ["x.io/a", teardown.FINALIZER]
    made = teardown.on_create(desired, None)
    assert made["metadata"]["finalizers"] == ["x.io/a", teardown.FINALIZER]  # once, others kept
    plain = replica()
    assert teardown.on_create(plain, None)["metadata"]["finalizers"] == [teardown.FINALIZER]
    assert "finalizers" not in plain["metadata"]  # the rendered object is left as it was
    live = replica()
    assert teardown.has_finalizer(teardown.on_create(replica(), live))


def test_no_finalizer_is_added_to_a_replica_being_deleted_without_it() -> None:
    released = deleted(finalizers=["x.io/a"])  # teardown done, another controller's finalizer pins it
    assert "finalizers" not in teardown.on_create(replica(), released)["metadata"]
    assert teardown.has_finalizer(teardown.on_create(replica(), deleted()))  # still held: kept in the apply
