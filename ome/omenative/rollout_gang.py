"""Gang surge (pure): a multi-pod Instance's SurgeThenDrain update, as a whole replacement Instance.

States of the pair (source row / replacement row), driven from the source:

    source Ready(old) --start--> source Updating/Surge (surgeIndex j) + row j Creating/GangSurgeTarget
    Surge --every replacement pod serving for minReadySeconds, not paused--> source Updating/SurgeDrain
    Surge --the replacement fails (revision fault, deadline, no room)--> source Ready(old) + lastFailure,
          row j GangSurgeTargetCleanup, GangSurgeAbandoned warning
    SurgeDrain --source pods drained and deleted--> source row removed, row j Ready(new)
    GangSurgeTargetCleanup --its pods gone--> row j removed

The replacement starts at incarnation 1 at the lowest free index, so indices can have gaps. Rows in a
pair carry operation type Update; the InferenceReplica planner leaves them alone and never counts a
replacement when it scales.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from ome.omenative import instance_names as names
from ome.omenative import rollout_clock as clock
from ome.omenative import rollout_plan as rp
from ome.omenative import rollout_retry as retry
from ome.omenative import rollout_types as rt
from ome.omenative.pods_view import format_time
from ome.omenative.revisions import RevisionData, owner_reference
from ome.omenative.rollout_pods import RolloutPod

TARGET = "GangSurgeTarget"
CLEANUP = "GangSurgeTargetCleanup"


def free_index(rows: Mapping[int, rt.Row], pods: Mapping[int, list[RolloutPod]]) -> int:
    taken = set(rows) | {i for i, p in pods.items() if p}
    index = 0
    while index in taken:
        index += 1
    return index


def start(inp: rt.Inputs, source: rt.Row, index: int) -> tuple[rt.Row, rt.Row]:
    """The source's Update operation names the replacement's index; the replacement row claims it."""
    op = rp.operation(inp, source, rt.SURGE)
    op["surgeIndex"] = index
    moving = {k: v for k, v in source.items() if k not in ("readySince", "operation")}
    moving.update(phase="Updating", targetRevision=inp.update_revision, operation=op)
    now = format_time(inp.now)
    target_op: rt.Row = {
        "id": f"{index}-1-gang-surge-target",
        "type": "Update",
        "step": TARGET,
        "startedAt": now,
        "lastProgressAt": now,
        "targetRevision": inp.update_revision,
        "strategy": inp.strategy.type,
    }
    if inp.ready_timeout is not None:
        target_op["deadline"] = format_time(inp.now + timedelta(seconds=inp.ready_timeout))
    target = {
        "index": index,
        "incarnation": 1,
        "phase": "Creating",
        "runningRevision": inp.update_revision,
        "targetRevision": inp.update_revision,
        "operation": target_op,
    }
    return moving, target


def is_target(row: rt.Row) -> bool:
    return (row.get("operation") or {}).get("step") in (TARGET, CLEANUP)


def step(
    inp: rt.Inputs,
    source: rt.Row,
    rows: Mapping[int, rt.Row],
    pods: Mapping[int, list[RolloutPod]],
    data: RevisionData,
    target_name: str,
    blocks: list[retry.Block],
    out: rt.Plan,
) -> tuple[rt.Row | None, rt.Row | None, list[retry.Block]]:
    """(source, replacement, blocks) after one pass; None means the row goes."""
    op = source["operation"]
    index = int(op["surgeIndex"])
    target = rows.get(index)
    if target is None or (target.get("operation") or {}).get("step") != TARGET:
        if op.get("step") == rt.SURGE_DRAIN and target is not None and target.get("phase") == "Ready":
            return _drain_source(inp, source, target, pods, target_name, blocks, out)
        return _abandon(inp, source, target, pods, "ReplacementLost", target_name, blocks, out)
    replacement = [p for p in pods.get(index, []) if not p.view.terminating]
    expected = rt.own_names(inp, index, data)
    if op.get("step") == rt.SURGE:
        target = clock.held_clock(inp, target, replacement)
        failure = clock.attempt_failure(inp, target, replacement, out)
        if failure is not None:
            return _abandon(inp, source, target, pods, failure, target_name, blocks, out)
        for name in sorted(expected - {p.name for p in pods.get(index, [])}):
            runner, ordinal = _runner_of(inp, index, name)
            out.creates.append(rt.PodCreate(index, 1, rt.digest(target_name), runner, ordinal))
        current = [p for p in replacement if p.name in expected]
        rp.open_when_ready(current, len(expected), out)
        if len(current) < len(expected) or not rp.settled(inp, current, out) or inp.paused:
            return source, target, blocks
        source = {
            **source,
            "operation": {**op, "step": rt.SURGE_DRAIN, "lastProgressAt": format_time(inp.now)},
        }
    return _drain_source(inp, source, target, pods, target_name, blocks, out)


def _drain_source(
    inp: rt.Inputs,
    source: rt.Row,
    promoted: rt.Row,
    pods: Mapping[int, list[RolloutPod]],
    target_name: str,
    blocks: list[retry.Block],
    out: rt.Plan,
) -> tuple[rt.Row | None, rt.Row | None, list[retry.Block]]:
    """Out of rotation, then deleted; the source row goes with its last pod, and the replacement is
    promoted (Ready on the target) in the same write."""
    left = pods.get(int(source["index"]), [])
    for pod in left:
        if pod.view.terminating:
            continue
        if pod.view.gate != "False" and pod.view.phase == "Running" and pod.view.gate is not None:
            out.close_gates.append(pod.name)
        elif pod.view.drained or pod.view.gate is None:
            out.deletes.append(pod.name)
    if left:
        return source, promoted, blocks
    if promoted.get("phase") != "Ready":
        promoted = rp.finish(inp, {**promoted, "incarnation": 1}, target_name)
    return None, promoted, rp.succeeded_block(target_name, blocks)


def _abandon(
    inp: rt.Inputs,
    source: rt.Row,
    target: rt.Row | None,
    pods: Mapping[int, list[RolloutPod]],
    failure: rt.Row | str,
    target_name: str,
    blocks: list[retry.Block],
    out: rt.Plan,
) -> tuple[rt.Row | None, rt.Row | None, list[retry.Block]]:
    """The replacement failed: it is cleaned up, the source serves on, and the revision backs off."""
    op = source["operation"]
    index = int(op["surgeIndex"])
    record = (
        failure
        if isinstance(failure, dict)
        else {"podName": "", "reason": failure, "time": format_time(inp.now)}
    )
    back = {k: v for k, v in source.items() if k != "operation"}
    back.update(phase="Ready", targetRevision=source.get("runningRevision"), lastFailure=record)
    back["readySince"] = back.get("readySince") or format_time(inp.now)
    out.events.append(
        (
            "Warning",
            "GangSurgeAbandoned",
            f"OMENative component={inp.component} instance={source['index']} abandoned failed gang surge "
            f"(surge-index={index}); resetting to revision {source.get('runningRevision')} for a fresh "
            "rollout",
        )
    )
    blocks = rp.fail_block(inp, target_name, record, blocks, out)
    cleanup = None
    if target is not None:
        cleanup = {**target, "operation": {**(target.get("operation") or {}), "step": CLEANUP}}
        cleanup = clean(cleanup, pods.get(index, []), out)
    return back, cleanup, blocks


def clean(target: rt.Row, pods: list[RolloutPod], out: rt.Plan) -> rt.Row | None:
    """An abandoned replacement: delete its pods; the row goes with the last one."""
    out.deletes += [p.name for p in pods if not p.view.terminating]
    return target if pods else None


def _runner_of(inp: rt.Inputs, index: int, name: str) -> tuple[str, int]:
    runner, _, ordinal = name.removeprefix(f"{inp.base}-{inp.component}-{index}-").rpartition("-")
    return runner, int(ordinal)


def pod_group(
    replica: Mapping[str, Any], base: str, component: str, index: int, members: int,
    schedule_timeout: int | None = None,
) -> rt.Row:
    """The scheduler-plugins PodGroup of a multi-pod Instance (a new one or a replacement), so a
    gang-aware scheduler places all its pods or none; owned by the replica. `schedule_timeout` is
    `scheduleTimeoutSeconds` (ome.omenative.gang_timeout), left out when None."""
    meta = replica["metadata"]
    spec: rt.Row = {"minMember": members}
    if schedule_timeout is not None:
        spec["scheduleTimeoutSeconds"] = schedule_timeout
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {
            "name": names.pod_group_name(base, component, index),
            "namespace": meta["namespace"],
            "labels": names.selector_labels(base, component),
            "ownerReferences": [owner_reference(replica)],
        },
        "spec": spec,
    }
