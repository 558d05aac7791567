"""The operation clock of an update attempt (pure): holds that stop it (`operation.waiting`) and the
failures that end the attempt (a revision fault, a rejected pod, no room past the grace, the deadline).

An attempt's deadline is its start plus instanceReadyTimeout. While the cluster holds the attempt the
clock stops: `QuotaExceeded` (a ResourceQuota refused its pods), `PodGroupTerminating` (its PodGroup
name is held by one being deleted), `Unschedulable` (the scheduler cannot
place one) or `NodeUnknown` (a pod it must replace is on a node that stopped reporting); `Paused` is set
by the pass itself. When a hold ends the deadline restarts in full.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from ome.omenative import rollout_retry as retry
from ome.omenative.pods_view import format_time, parse_time
from ome.omenative.rollout_pods import RolloutPod
from ome.omenative.rollout_types import (
    HOLDS,
    NODE_UNKNOWN,
    PAUSED,
    POD_GROUP_TERMINATING,
    QUOTA_EXCEEDED,
    UNSCHEDULABLE,
    Inputs,
    Plan,
    Row,
)


def held_clock(
    inp: Inputs, row: Row, current: Sequence[RolloutPod], replacing: Sequence[RolloutPod] = ()
) -> Row:
    """While the cluster holds an attempt the operation waits and its clock stops: a ResourceQuota
    refused its pods (`QuotaExceeded`), the scheduler cannot place one (`Unschedulable`), or a pod it
    must replace is on a node that stopped reporting (`NodeUnknown`). Once the hold ends the deadline
    restarts in full. unschedulableGracePeriod still applies; a pause (`Paused`) is `_clock`'s."""
    op = dict(row.get("operation") or {})
    hold = None
    if int(row["index"]) in inp.quota_refused:
        hold = QUOTA_EXCEEDED
    elif int(row["index"]) in inp.pod_group_terminating:
        hold = POD_GROUP_TERMINATING
    elif any(p.unschedulable_since is not None for p in current):
        hold = UNSCHEDULABLE
    elif any(p.node_unknown for p in replacing):
        hold = NODE_UNKNOWN
    waiting = op.get("waiting")
    if waiting == PAUSED:
        return row
    if hold is not None and waiting != hold:
        return {**row, "operation": {**op, "waiting": hold}}
    if hold is None and waiting in HOLDS:
        op.pop("waiting")
        if inp.ready_timeout is not None:
            op["deadline"] = format_time(inp.now + timedelta(seconds=inp.ready_timeout))
        return {**row, "operation": op}
    return row


def attempt_failure(inp: Inputs, row: Row, current: list[RolloutPod], out: Plan) -> Row | None:
    """lastFailure when the attempt failed: a revision fault on a new pod, a rejected pod, a pod
    unschedulable past the grace, or the deadline. None while it may still succeed."""
    now = format_time(inp.now)
    for pod in sorted(current, key=lambda p: p.name):
        if retry.counts_against_revision(pod.waiting_reason):
            failure = {"podName": pod.name, "reason": pod.waiting_reason, "time": now}
            if pod.container:
                failure["containerName"] = pod.container
            return failure
    if (reason := inp.rejected.get(int(row["index"]))) is not None:
        return {"podName": "", "reason": reason, "time": now}
    if inp.unschedulable_grace is not None:
        for pod in current:
            since = pod.unschedulable_since
            if since is None:
                continue
            over = since + timedelta(seconds=inp.unschedulable_grace)
            if inp.now >= over:
                return {"podName": pod.name, "reason": "Unschedulable", "time": now}
            out.wake((over - inp.now).total_seconds())
    op = row.get("operation") or {}
    deadline = parse_time(op.get("deadline"))
    if deadline is not None and op.get("waiting") not in HOLDS:
        if inp.now >= deadline:
            name = min((p.name for p in current), default="")
            return {"podName": name, "reason": "DeadlineExceeded", "time": now}
        out.wake((deadline - inp.now).total_seconds())
    return None
