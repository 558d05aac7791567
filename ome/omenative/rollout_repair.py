"""Crash-loop repair (pure): restart a Ready Instance whose pod is wedged past the stuck-pod grace.

States: Ready --a pod waits in a state that never clears (CrashLoopBackOff, ImagePullBackOff, ...) and is
older than `stuckPodGracePeriod`, budget allows--> Restarting at incarnation + 1 (the InferenceReplica
planner runs the restart); --budget spent--> stays Ready, one RepairHeld warning per episode.

Under either restart policy. `maxUnavailable` paces the repairs: one starts only while fewer Instances
than the budget are restarting or out of service for an update. A freeze (`pauseMode: Freeze`) starts
none. Off without a grace period.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Final

from ome.omenative import rollout_budget as budget
from ome.omenative import rollout_types as rt
from ome.omenative.pods_view import TERMINAL_WAITING_REASONS as WEDGED
from ome.omenative.pods_view import format_time
from ome.omenative.rollout_pods import RolloutPod

HELD_ENTRY: Final = "RepairHeld"


def wedged(inp: rt.Inputs, row: rt.Row, pods: list[RolloutPod]) -> RolloutPod | None:
    """The row's first pod stuck in a state that does not clear, older than the grace."""
    if inp.stuck_grace is None:
        return None
    data = inp.revisions.get(rt.digest(row.get("runningRevision") or ""))
    if data is None:
        return None
    mine = rt.own_names(inp, int(row["index"]), data, rt.active(row))
    for pod in sorted(pods, key=lambda p: p.name):
        if pod.name not in mine or pod.view.terminating or pod.waiting_reason not in WEDGED:
            continue
        born = pod.created or inp.now
        due = born + timedelta(seconds=inp.stuck_grace)
        if inp.now >= due:
            return pod
    return None


def in_flight(rows: Mapping[int, rt.Row]) -> int:
    """Instances restarting or out of service for an update (SurgeThenDrain updates keep serving)."""
    return sum(
        1
        for r in rows.values()
        if r.get("phase") == "Restarting"
        or (rt.moving(r) and (r.get("operation") or {}).get("strategy") != budget.SURGE)
    )


def repair(
    inp: rt.Inputs, rows: dict[int, rt.Row], pods: Mapping[int, list[RolloutPod]], out: rt.Plan
) -> None:
    if inp.stuck_grace is None or inp.freeze:
        return
    limit = budget.resolve(inp.strategy.max_unavailable, inp.desired)
    busy = in_flight(rows)
    for index in sorted(rows):
        row = rows[index]
        if row.get("phase") != "Ready" or index in out.rows:
            continue
        pod = wedged(inp, row, pods.get(index, []))
        if pod is None:
            _wake(inp, row, pods.get(index, []), out)
            if HELD_ENTRY in (row.get("announced") or []):  # the episode is over
                kept = [a for a in row["announced"] if a != HELD_ENTRY]
                out.rows[index] = {k: v for k, v in row.items() if k != "announced"} | (
                    {"announced": kept} if kept else {}
                )
            continue
        if limit is not None and busy + 1 > limit:
            _held(inp, row, budget.unavailability_denied(limit, busy + 1), out)
            continue
        busy += 1
        out.rows[index] = rows[index] = restart(inp, row, pod, out)


def restart(inp: rt.Inputs, row: rt.Row, pod: RolloutPod, out: rt.Plan) -> rt.Row:
    incarnation = int(row.get("incarnation") or 1) + 1
    reason = pod.waiting_reason or "CrashLoopBackOff"
    out.events.append(
        (
            "Warning",
            "RestartTriggered",
            f"OMENative component={inp.component} instance={row['index']} restart triggered: pod {pod.name} "
            f"wedged in {reason} past the stuck-pod grace (incarnation={incarnation})",
        )
    )
    now = format_time(inp.now)
    failure: rt.Row = {"podName": pod.name, "reason": reason, "time": now}
    if pod.container:
        failure["containerName"] = pod.container
    op: rt.Row = {
        "id": f"{row['index']}-{incarnation}-restart",
        "type": "Restart",
        "step": "Drain",
        "startedAt": now,
        "lastProgressAt": now,
    }
    if inp.ready_timeout is not None:
        op["deadline"] = format_time(inp.now + timedelta(seconds=inp.ready_timeout))
    new = {k: v for k, v in row.items() if k not in ("readySince", "announced")}
    new.update(phase="Restarting", incarnation=incarnation, lastFailure=failure, operation=op)
    return new


def _held(inp: rt.Inputs, row: rt.Row, reason: str, out: rt.Plan) -> None:
    """RepairHeld, once per episode (stamped in the row's `announced`)."""
    announced = list(row.get("announced") or [])
    if HELD_ENTRY in announced:
        return
    out.events.append(
        (
            "Warning",
            "RepairHeld",
            f"OMENative component={inp.component} instance={row['index']} crash-loop repair held by Budget: "
            f"{reason}",
        )
    )
    out.rows[int(row["index"])] = {**row, "announced": sorted({*announced, HELD_ENTRY})}


def _wake(inp: rt.Inputs, row: rt.Row, pods: list[RolloutPod], out: rt.Plan) -> None:
    """Wake when a stuck pod passes the grace (no polling)."""
    if inp.stuck_grace is None:
        return
    for pod in pods:
        if pod.waiting_reason in WEDGED and pod.created is not None and not pod.view.terminating:
            out.wake((pod.created + timedelta(seconds=inp.stuck_grace) - inp.now).total_seconds())
