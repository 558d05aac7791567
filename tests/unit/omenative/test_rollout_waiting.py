"""`operation.waiting` holds that stop an update's clock (docs: Instances, Operations): a ResourceQuota
that refused the attempt's pod (QuotaExceeded) and a pod to replace on a node that stopped reporting
(NodeUnknown)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from ome.omenative import rollout_plan as rp
from ome.omenative.pods_view import format_time
from ome.omenative.rollout_pods import node_unknown, rollout_pod
from ome.omenative.rollout_types import PodCreate
from tests.unit.omenative.test_rollout_plan import H_NEW, NOW, R_NEW, pod, ready_row, surging
from tests.unit.omenative.test_rollout_plan import inputs as plan_inputs

LATE = NOW + timedelta(hours=1)  # well past the operation's deadline (NOW + 29m)


def test_a_quota_refusal_holds_the_surge_as_quota_exceeded_and_stops_its_clock() -> None:
    row = surging(startedAt="2026-09-27T07:00:00Z")
    out = rp.plan(plan_inputs([row], [pod(0)], now=LATE, quota_refused=frozenset({0})))
    held = out.rows[0]
    assert held["phase"] == "Updating" and held["operation"]["waiting"] == "QuotaExceeded"
    assert out.creates == [PodCreate(0, 1, H_NEW, "default", 1)]  # the create is tried again
    # The quota makes room: the pod is created, the hold ends and the deadline restarts in full.
    created = pod(0, 1, digest=H_NEW, gate=None, containers_ready=False, created=LATE)
    resumed = rp.plan(plan_inputs([held], [pod(0), created], now=LATE))
    op = resumed.rows[0]["operation"]
    assert "waiting" not in op and op["deadline"] == format_time(LATE + timedelta(minutes=30))
    assert resumed.rows[0]["phase"] == "Updating"


def test_without_the_hold_the_same_late_surge_fails_on_its_deadline() -> None:
    row = surging(startedAt="2026-09-27T07:00:00Z")
    out = rp.plan(plan_inputs([row], [pod(0)], now=LATE))
    assert out.rows[0]["lastFailure"]["reason"] == "DeadlineExceeded"


def drain_row() -> dict[str, object]:
    return {
        **ready_row(0),
        "incarnation": 2,
        "phase": "Updating",
        "targetRevision": R_NEW,
        "operation": {
            "id": "0-1-update",
            "type": "Update",
            "step": "Drain",
            "startedAt": "2026-09-27T07:00:00Z",
            "lastProgressAt": "2026-09-27T07:00:00Z",
            "targetRevision": R_NEW,
            "strategy": "RecreatePod",
            "deadline": "2026-09-27T07:30:00Z",
        },
    }


def test_a_pod_to_replace_on_a_silent_node_holds_the_drain_as_node_unknown() -> None:
    stuck = dataclasses.replace(pod(0, terminating=True, gate="False", ready=False), node_unknown=True)
    out = rp.plan(plan_inputs([drain_row()], [stuck], type_="RecreatePod", max_unavailable=1, now=LATE))
    held = out.rows[0]
    assert held["operation"]["waiting"] == "NodeUnknown" and not out.creates
    # The pod is force-deleted (or the node returns): the new pod is made with a full window.
    gone = rp.plan(plan_inputs([held], [], type_="RecreatePod", max_unavailable=1, now=LATE))
    op = gone.rows[0]["operation"]
    assert "waiting" not in op and op["deadline"] == format_time(LATE + timedelta(minutes=30))
    assert [c.incarnation for c in gone.creates] == [2] and "lastFailure" not in gone.rows[0]


def test_a_pod_on_a_reporting_node_does_not_hold_the_drain() -> None:
    leaving = pod(0, terminating=True, gate="False", ready=False)
    out = rp.plan(plan_inputs([drain_row()], [leaving], type_="RecreatePod", max_unavailable=1, now=LATE))
    row = out.rows.get(0, drain_row())
    assert "waiting" not in row["operation"]


def test_a_node_stopped_reporting_when_its_ready_is_unknown() -> None:
    silent = {"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}
    assert node_unknown(silent) and not node_unknown({"status": {"conditions": [{"type": "Ready",
                                                                                 "status": "False"}]}})
    assert not node_unknown(None)
    body = {"metadata": {"name": "chat-engine-0-default-0", "labels": {"ome.io/instance-index": "0"}},
            "spec": {"nodeName": "n1"}}
    found = rollout_pod(body, silent)
    assert found is not None and found.node_unknown


def test_a_terminating_pod_group_holds_the_update_as_pod_group_terminating() -> None:
    """The Instance's PodGroup from an earlier attempt is still being deleted (docs: Instances,
    Operations): the update waits with its clock stopped, and gets a full window once the name is free."""
    row = surging(startedAt="2026-09-27T07:00:00Z")
    out = rp.plan(plan_inputs([row], [pod(0)], now=LATE, pod_group_terminating=frozenset({0})))
    held = out.rows[0]
    assert held["phase"] == "Updating" and held["operation"]["waiting"] == "PodGroupTerminating"
    assert "lastFailure" not in held
    resumed = rp.plan(plan_inputs([held], [pod(0)], now=LATE))
    op = resumed.rows[0]["operation"]
    assert "waiting" not in op and op["deadline"] == format_time(LATE + timedelta(minutes=30))
