"""A paused replica starts no new Instance and rebuilds no lost pod; scale-down goes ahead."""

from __future__ import annotations

from ome.omenative import instances
from tests.unit.omenative.builders import pod
from tests.unit.omenative.test_instances import ctx, ready_row


def test_scale_up_waits_for_the_resume() -> None:
    rows, pods = [ready_row(0)], [pod("chat-engine-0-default-0", digest="abc")]
    paused = instances.plan(ctx(3, paused=True), rows, pods)
    assert [r["index"] for r in paused.rows] == [0] and not paused.creates
    resumed = instances.plan(ctx(3), rows, pods)
    assert sorted(r["index"] for r in resumed.rows) == [0, 1, 2] and len(resumed.creates) == 2


def test_a_lost_pod_stays_pending_until_the_resume() -> None:
    pending = {**ready_row(0), "phase": "Pending"}
    paused = instances.plan(ctx(1, paused=True), [pending], [])
    assert paused.rows[0]["phase"] == "Pending" and not paused.creates
    resumed = instances.plan(ctx(1), [pending], [])
    assert resumed.rows[0]["phase"] == "Creating" and resumed.creates


def test_scale_down_goes_ahead_while_paused() -> None:
    rows = [ready_row(0), ready_row(1)]
    pods = [
        pod("chat-engine-0-default-0", digest="abc"),
        pod("chat-engine-1-default-0", index=1, digest="abc"),
    ]
    out = instances.plan(ctx(1, paused=True), rows, pods)
    assert [r["phase"] for r in out.rows] == ["Ready", "Deleting"]
