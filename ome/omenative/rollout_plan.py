"""Instance rollout planning (pure): move existing Instances onto the update revision, one pass at a time.

The rollout owns an Instance while its row is `Updating` (operation type `Update`), and the `Failed`
rows an update left behind; the InferenceReplica planner (`ome.omenative.instances`) owns every other
phase and never touches an `Updating` row beyond its pod counts.

States (row phase / operation step) and transitions, single-pod Instance:

    Ready(old) --start, SurgeThenDrain--> Updating/Surge      (new pod at the other ordinal)
    Ready(old) --start, RecreatePod, or a non-image change under InPlaceIfPossible--> Updating/Drain
    Ready(old) --start, image-only change under InPlaceIfPossible/InPlaceOnly--> Updating/InPlace
    Ready(old) --non-image change under InPlaceOnly--> Ready(old) + InPlaceUpdateNotPossible (once)
    Updating/Surge --new pod serving for minReadySeconds, not paused--> Updating/SurgeDrain
    Updating/Surge --attempt fails--> Ready(old), the new pod left as an extra pod (it holds a slot)
    Updating/SurgeDrain --old pod's gate closed, then deleted--> Ready(new), activeOrdinal flipped
    Updating/Drain --old pods gone--> pods created at incarnation + 1 --serving--> Ready(new)
    Updating/InPlace --out of rotation--> images patched --containers ready, serving--> Ready(new)
    Updating/Drain or InPlace --attempt fails--> Failed (operation kept), retried with new pods
    Failed(update) --retry block allows--> Updating/Drain (incarnation + 1)

A multi-pod Instance moves whole: Drain under every strategy but SurgeThenDrain, which needs a whole
replacement Instance at a new index (not implemented yet: such Instances wait).

A start needs: not paused, the revision's retry block allowing it (`rollout_retry`), a place past the
partition (the lowest-indexed Instances on old revisions stay), and the budget: SurgeThenDrain counts
moving Instances plus slots held by extra pods against maxSurge; the others count Instances out of
service against maxUnavailable.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from ome.omenative import instance_names as names
from ome.omenative import instances
from ome.omenative import rollout_budget as budget
from ome.omenative import rollout_clock as clock
from ome.omenative import rollout_gang as gang
from ome.omenative import rollout_inplace as inplace
from ome.omenative import rollout_repair as repair
from ome.omenative import rollout_retry as retry
from ome.omenative.pods_view import format_time, parse_time
from ome.omenative.revisions import RevisionData
from ome.omenative.rollout_pods import RolloutPod, serving_for
from ome.omenative.rollout_types import (
    DRAIN,
    IN_PLACE,
    PAUSED,
    SURGE,
    SURGE_DRAIN,
    Inputs,
    Plan,
    PodCreate,
    Row,
    active,
    digest,
    failed_update,
    moving,
    own_names,
    pod_count,
)

# -- the pass ------------------------------------------------------------------------------------


def plan(inp: Inputs) -> Plan:
    out = Plan()
    blocks = retry.for_update_revision(inp.retry_blocks, inp.update_revision)
    answer = retry.release(inp.annotations, blocks, inp.namespace, inp.replica, inp.component)
    if answer is not None:
        blocks = answer.blocks
        out.events.append(answer.event)
        out.release_answered = True
    by_index: dict[int, list[RolloutPod]] = {}
    for pod in inp.pods:
        by_index.setdefault(pod.index, []).append(pod)
    rows = {int(r["index"]): dict(r) for r in inp.rows}
    state = _Budget(inp, rows, by_index)
    for index in sorted(rows):
        row = rows.get(index)
        if row is None:
            continue
        if moving(row) and "surgeIndex" in (row.get("operation") or {}):
            blocks = _step_pair(inp, row, rows, by_index, blocks, out)
        elif moving(row):
            new, blocks = step(inp, row, by_index.get(index, []), blocks, out)
            if new != row:
                out.rows[index] = new
                rows[index] = new
        elif gang.is_target(row) and index not in out.rows and not _claimed(rows, index):
            _set(rows, index, gang.clean(row, by_index.get(index, []), out), out)
    blocks = start_updates(inp, rows, by_index, blocks, state, out)
    repair.repair(inp, rows, by_index, out)
    out.retry_blocks = blocks
    out.wake(state.release_in)
    return out


def _claimed(rows: Mapping[int, Row], index: int) -> bool:
    """A replacement row whose source still names it (else it is cleaned up)."""
    return any(
        moving(r)
        and (r.get("operation") or {}).get("surgeIndex") == index
        and (r["operation"].get("step") == SURGE or r["operation"].get("step") == SURGE_DRAIN)
        and rows[index].get("operation", {}).get("step") == gang.TARGET
        for r in rows.values()
    )


def _set(rows: dict[int, Row], index: int, new: Row | None, out: Plan) -> None:
    if new is None:
        rows.pop(index, None)
        out.rows.pop(index, None)
        out.removed.append(index)
    elif new != rows.get(index):
        rows[index] = out.rows[index] = new


def _step_pair(
    inp: Inputs,
    source: Row,
    rows: dict[int, Row],
    pods: Mapping[int, list[RolloutPod]],
    blocks: list[retry.Block],
    out: Plan,
) -> list[retry.Block]:
    op = source["operation"]
    target = str(op.get("targetRevision"))
    data = inp.revisions.get(digest(target))
    if data is None:
        return blocks
    source = _clock(inp, source, dict(op))
    surge_index = int(op["surgeIndex"])
    new_source, new_target, blocks = gang.step(inp, source, rows, pods, data, target, blocks, out)
    _set(rows, int(source["index"]), new_source, out)
    if new_target is not None or surge_index in rows:
        _set(rows, surge_index, new_target, out)
    return blocks


class _Budget:
    """Budget use before this pass's starts: moving Instances, extra pods, Instances out of service."""

    def __init__(self, inp: Inputs, rows: Mapping[int, Row], pods: Mapping[int, list[RolloutPod]]) -> None:
        self.extra: dict[int, list[budget.ExtraPod]] = {}
        self.release_in: float | None = None
        listed_all: list[budget.ExtraPod] = []
        for index, row in rows.items():
            data = inp.revisions.get(digest(row.get("runningRevision") or ""))
            if data is None or moving(row) and (row.get("operation") or {}).get("strategy") == budget.SURGE:
                continue
            listed = [p for p in pods.get(index, []) if not (p.view.terminating and _grace_over(p, inp.now))]
            mine = own_names(inp, index, data, active(row))
            members = [p for p in listed if p.name in mine and not p.view.terminating]
            others = sorted(
                (p for p in listed if p not in members), key=lambda p: (p.view.terminating, p.name)
            )
            count = max(len(listed) - data.pod_count, 0)
            extra = [budget.ExtraPod(p.name, index, p.view.terminating, p.grace_ends) for p in others[:count]]
            if extra:
                self.extra[index] = extra
                listed_all += extra
        self.release_in = budget.next_release(listed_all, inp.now)
        self.sizes = {i: pod_count(inp, r) for i, r in rows.items()}
        self.surging = sum(
            1
            for r in rows.values()
            if moving(r) and (r.get("operation") or {}).get("strategy") == budget.SURGE
        )
        self.unavailable = sum(
            1
            for i, r in rows.items()
            if r.get("phase") != "Deleting" and (_out_of_service(inp, r, pods.get(i, [])) or _drain_move(r))
        )

    def surge_prior(self, index: int) -> tuple[int, list[budget.ExtraPod]]:
        """Slots in use, not counting the candidate's own extra pods (its start evicts them)."""
        extra = [p for i, pods in self.extra.items() if i != index for p in pods]
        return self.surging + budget.extra_slots(extra, self.sizes), extra


def _grace_over(pod: RolloutPod, now: datetime) -> bool:
    return pod.grace_ends is not None and now >= pod.grace_ends


def _drain_move(row: Row) -> bool:
    return moving(row) and (row.get("operation") or {}).get("strategy") != budget.SURGE


def _out_of_service(inp: Inputs, row: Row, pods: list[RolloutPod]) -> bool:
    data = inp.revisions.get(digest(row.get("runningRevision") or ""))
    if data is None:
        return True
    serving = [p for p in pods if p.view.serving and p.view.incarnation == row.get("incarnation")]
    return len(serving) < data.pod_count


# -- starting updates ----------------------------------------------------------------------------


def start_updates(
    inp: Inputs,
    rows: dict[int, Row],
    pods: Mapping[int, list[RolloutPod]],
    blocks: list[retry.Block],
    state: _Budget,
    out: Plan,
) -> list[retry.Block]:
    target = inp.update_revision
    new = inp.revisions.get(digest(target))
    if new is None:
        return blocks
    waiting = sorted(
        i
        for i, r in rows.items()
        if r.get("phase") in ("Ready", "Failed") and r.get("runningRevision") != target
    )
    retrying = sorted(i for i, r in rows.items() if failed_update(r) and r.get("runningRevision") == target)
    held = set(waiting[: inp.strategy.partition])
    candidates = [i for i in waiting if i not in held] + retrying
    hold: Row | None = None
    started = 0
    limit = inp.strategy.budget(inp.desired)
    for index in sorted(candidates):
        if inp.paused:
            break
        row = rows[index]
        block = retry.find(blocks, target)
        allowed, gate = retry.start_allowed(block, inp.now)
        if not allowed:
            hold = hold or _hold(inp, str(gate), retry.hold_reason(block or {}))
            out.wake(retry.wake_after(block, inp.now))
            break
        old = inp.revisions.get(digest(row.get("runningRevision") or ""))
        if old is None:
            continue
        kind = choose_step(inp, old, new, failed_update(row))
        if kind is None:
            _refuse(inp, row, out)
            continue
        if limit is not None:
            if kind == SURGE:
                prior, extra = state.surge_prior(index)
                projected = prior + 1  # `surging` already counts this pass's starts
                if projected > limit:
                    hold = hold or _hold(inp, "Budget", budget.surge_denied(limit, projected, extra))
                    continue
            elif not failed_update(row):
                projected = state.unavailable + 1
                if _out_of_service(inp, row, pods.get(index, [])):
                    projected -= 1  # already counted
                if projected > limit:
                    hold = hold or _hold(inp, "Budget", budget.unavailability_denied(limit, projected))
                    continue
        if block is not None:
            blocks = retry.replace(blocks, retry.started(block), target)
        if kind == SURGE and old.multi_pod:
            # A whole replacement Instance at a new index; its pods follow the status write.
            fresh, replacement = gang.start(inp, row, gang.free_index(rows, pods))
            out.rows[index] = rows[index] = fresh
            out.rows[replacement["index"]] = rows[replacement["index"]] = replacement
            blocks = _step_pair(inp, fresh, rows, pods, blocks, out)
        else:
            fresh = begin(inp, row, kind, pods.get(index, []), out)
            # The first step's pod writes follow the status write that records the operation.
            fresh, blocks = step(inp, fresh, pods.get(index, []), blocks, out)
            out.rows[index] = rows[index] = fresh
        started += 1
        if kind == SURGE:
            state.surging += 1
        elif not _out_of_service(inp, row, pods.get(index, [])):
            state.unavailable += 1
        if block is not None:
            break  # a retry is one attempt at a time
    out.rollout_hold = hold
    return blocks


def choose_step(inp: Inputs, old: RevisionData, new: RevisionData, retrying: bool) -> str | None:
    """The step an update starts with under the spec's strategy; None when InPlaceOnly refuses it."""
    kind = inp.strategy.type
    if retrying:
        return DRAIN  # a failed attempt is retried with new pods
    if kind == budget.SURGE:
        return SURGE
    if kind == budget.RECREATE:
        return DRAIN
    if inplace.in_place_possible(old, new):
        return IN_PLACE
    if kind == budget.IN_PLACE_ONLY and not (old.multi_pod or new.multi_pod):
        return None
    return DRAIN


def _refuse(inp: Inputs, row: Row, out: Plan) -> None:
    """The InPlaceUpdateNotPossible warning, once per Instance and target (stamped in `announced`)."""
    entry = f"InPlaceUpdateNotPossible@{digest(inp.update_revision)}"
    announced = list(row.get("announced") or [])
    if entry in announced:
        return
    out.events.append(
        ("Warning", "InPlaceUpdateNotPossible", inplace.refused_message(inp.component, row["index"]))
    )
    out.rows[int(row["index"])] = {**row, "announced": sorted({*announced, entry})}


def _hold(inp: Inputs, gate: str, reason: str) -> Row:
    previous = inp.previous_hold or {}
    same = previous.get("gate") == gate and previous.get("reason") == reason
    since = previous.get("since") if same else None
    return {
        "gate": gate,
        "reason": reason,
        "since": since or format_time(inp.now),
        "target": inp.update_revision,
    }


def operation(inp: Inputs, row: Row, kind: str, retries: int = 0) -> Row:
    now = format_time(inp.now)
    op: Row = {
        "id": f"{row['index']}-{row.get('incarnation') or 1}-update-{digest(inp.update_revision)}",
        "type": "Update",
        "step": kind,
        "startedAt": now,
        "lastProgressAt": now,
        "targetRevision": inp.update_revision,
        "strategy": inp.strategy.type,
    }
    if retries:
        op["id"] += f"-{retries}"
        op["retryCount"] = retries
    if inp.ready_timeout is not None:
        op["deadline"] = format_time(inp.now + timedelta(seconds=inp.ready_timeout))
    return op


def begin(inp: Inputs, row: Row, kind: str, pods: list[RolloutPod], out: Plan) -> Row:
    """Start an update: record the operation first; a surge evicts the Instance's extra pods."""
    retries = int((row.get("operation") or {}).get("retryCount") or 0) + 1 if failed_update(row) else 0
    new = {k: v for k, v in row.items() if k not in ("readySince", "operation")}
    new.update(
        phase="Updating", targetRevision=inp.update_revision, operation=operation(inp, row, kind, retries)
    )
    if kind == DRAIN:
        new["incarnation"] = int(row.get("incarnation") or 1) + 1
    if kind == SURGE:
        data = inp.revisions[digest(row["runningRevision"])]
        mine = own_names(inp, row["index"], data, active(row))
        out.deletes += [p.name for p in pods if p.name not in mine and not p.view.terminating]
    return new


# -- one moving Instance -------------------------------------------------------------------------


def step(
    inp: Inputs, row: Row, pods: list[RolloutPod], blocks: list[retry.Block], out: Plan
) -> tuple[Row, list[retry.Block]]:
    op = dict(row.get("operation") or {})
    target = str(op.get("targetRevision") or row.get("targetRevision"))
    data = inp.revisions.get(digest(target))
    if data is None:
        return row, blocks  # its target revision is gone: nothing to render from
    row = _clock(inp, row, op)
    kind = op.get("step")
    if kind in (SURGE, SURGE_DRAIN):
        return step_surge(inp, row, pods, data, target, blocks, out)
    if kind == IN_PLACE:
        return step_in_place(inp, row, pods, data, target, blocks, out)
    return step_drain(inp, row, pods, data, target, blocks, out)


def _clock(inp: Inputs, row: Row, op: Row) -> Row:
    """The operation clock stops while paused; the deadline restarts in full on resume."""
    if inp.paused and op.get("step") == SURGE and op.get("waiting") != PAUSED:
        return {**row, "operation": {**op, "waiting": PAUSED}}
    if not inp.paused and op.get("waiting") == PAUSED:
        op = {k: v for k, v in op.items() if k != "waiting"}
        if inp.ready_timeout is not None:
            op["deadline"] = format_time(inp.now + timedelta(seconds=inp.ready_timeout))
        return {**row, "operation": op}
    return row


def fail_block(
    inp: Inputs, target: str, failure: Row, blocks: list[retry.Block], out: Plan
) -> list[retry.Block]:
    block = retry.failed(retry.find(blocks, target), target, str(failure["reason"]), inp.policy, inp.now)
    if block["state"] == retry.HELD:
        out.events.append(
            ("Warning", "RetryHeld", retry.held_message(inp.namespace, inp.replica, inp.component, block))
        )
    else:
        out.wake(retry.wake_after(block, inp.now))
    return retry.replace(blocks, block, target) if target == inp.update_revision else blocks


def announce_failed(inp: Inputs, row: Row, failure: Row, out: Plan) -> None:
    """The InstanceFailed warning of an update attempt that leaves its Instance Failed (its old pods are
    gone), as the replica controller's own operations record one: the cause is the kubelet reason, the
    refusal, `Unschedulable` or the missed deadline."""
    reason = str(failure["reason"])
    if reason == "DeadlineExceeded":
        reason = instances.deadline_cause(row, "Update")
    message = instances.failed_message(f"{inp.namespace}/{inp.replica}", inp.component, int(row["index"]),
                                       str(failure.get("podName") or ""), reason)
    out.events.append(("Warning", "InstanceFailed", message))


def succeeded_block(target: str, blocks: list[retry.Block]) -> list[retry.Block]:
    block = retry.find(blocks, target)
    if block is not None and block.get("state") == retry.IN_PROGRESS:
        return retry.replace(blocks, None, target)
    return blocks


def settled(inp: Inputs, pods: list[RolloutPod], out: Plan) -> bool:
    """Every pod serves, each for minReadySeconds (else wake when the window ends)."""
    return serving_for(pods, inp.min_ready_seconds, inp.now, out.wake)


def open_when_ready(pods: list[RolloutPod], expected: int, out: Plan) -> None:
    """Gates open together once every pod's containers are ready (a gang enters rotation at once)."""
    if len(pods) == expected and all(p.view.containers_ready for p in pods):
        out.open_gates += [p.name for p in pods if p.view.gate != "True"]


def finish(inp: Inputs, row: Row, target: str, **extra: Any) -> Row:
    done = {k: v for k, v in row.items() if k not in ("operation", "activeOrdinal")}
    done.update(phase="Ready", runningRevision=target, targetRevision=target, readySince=format_time(inp.now))
    done.update({k: v for k, v in extra.items() if v})
    return done


def step_surge(
    inp: Inputs,
    row: Row,
    pods: list[RolloutPod],
    data: RevisionData,
    target: str,
    blocks: list[retry.Block],
    out: Plan,
) -> tuple[Row, list[retry.Block]]:
    op = row["operation"]
    started = parse_time(op.get("startedAt")) or inp.now
    old_ordinal, new_ordinal = active(row), 1 - active(row)
    runner = data.runners[0].name
    new_name = names.pod_name(inp.base, inp.component, row["index"], runner, new_ordinal)
    old_name = names.pod_name(inp.base, inp.component, row["index"], runner, old_ordinal)
    surge = [p for p in pods if p.name == new_name]
    leftovers = [p for p in surge if not p.view.terminating and p.created is not None and p.created < started]
    current = [p for p in surge if not p.view.terminating and p not in leftovers]
    out.deletes += [p.name for p in leftovers]
    if op.get("step") == SURGE:
        row = clock.held_clock(inp, row, current)
        failure = clock.attempt_failure(inp, row, current, out)
        if failure is not None:
            back = {k: v for k, v in row.items() if k not in ("operation",)}
            back.update(phase="Ready", targetRevision=row.get("runningRevision"), lastFailure=failure)
            back["readySince"] = back.get("readySince") or format_time(inp.now)
            return back, fail_block(inp, target, failure, blocks, out)
        if not surge:
            out.creates.append(
                PodCreate(row["index"], int(row.get("incarnation") or 1), digest(target), runner, new_ordinal)
            )
            return row, blocks
        open_when_ready(current, 1, out)
        if not settled(inp, current, out) or inp.paused:
            return row, blocks
        row = {**row, "operation": {**op, "step": SURGE_DRAIN, "lastProgressAt": format_time(inp.now)}}
    old = [p for p in pods if p.name == old_name and not p.view.terminating]
    # The gate is cleared before the pod drains: the delete of a pod whose gate closes in this plan goes
    # out once the close succeeded (the reconciler chains them), not a pass later after the kubelet
    # turned Ready False; the pod's preStop and grace cover the requests it still serves.
    closing = [p.name for p in old if p.view.gate != "False" and p.view.phase == "Running"]
    out.close_gates += closing
    out.deletes += [p.name for p in old]
    if closing:
        return row, blocks  # finished once the cache shows the gate closed (the delete in flight)
    return finish(inp, row, target, activeOrdinal=new_ordinal), succeeded_block(target, blocks)


def step_drain(
    inp: Inputs,
    row: Row,
    pods: list[RolloutPod],
    data: RevisionData,
    target: str,
    blocks: list[retry.Block],
    out: Plan,
) -> tuple[Row, list[retry.Block]]:
    """Drain and delete every pod of an older incarnation; then create the target's pods at the row's
    incarnation (names repeat, so only once the old ones are gone)."""
    incarnation = int(row.get("incarnation") or 1)
    stale = [p for p in pods if p.view.incarnation != incarnation]
    row = clock.held_clock(inp, row, [], [p for p in stale if p.view.terminating or p.view.drained])
    for pod in stale:
        if pod.view.terminating:
            continue
        if pod.view.gate != "False" and pod.view.phase == "Running" and pod.view.gate is not None:
            out.close_gates.append(pod.name)
        elif pod.view.drained or pod.view.gate is None:
            out.deletes.append(pod.name)
    if stale:
        return row, blocks
    if row.get("runningRevision") != target:
        row = {**row, "runningRevision": target}
    expected = own_names(inp, row["index"], data, active(row))
    current = [p for p in pods if p.name in expected and not p.view.terminating]
    row = clock.held_clock(inp, row, current)
    failure = clock.attempt_failure(inp, row, current, out)
    if failure is not None:
        announce_failed(inp, row, failure, out)
        return {**row, "phase": "Failed", "lastFailure": failure}, fail_block(
            inp, target, failure, blocks, out
        )
    missing = expected - {p.name for p in pods}
    for name in sorted(missing):
        runner, ordinal = _runner_of(inp, row["index"], name, data)
        out.creates.append(PodCreate(row["index"], incarnation, digest(target), runner, ordinal))
    open_when_ready(current, len(expected), out)
    if len(current) == len(expected) and settled(inp, current, out):
        return finish(inp, row, target, activeOrdinal=active(row)), succeeded_block(target, blocks)
    return row, blocks


def _runner_of(inp: Inputs, index: int, name: str, data: RevisionData) -> tuple[str, int]:
    prefix = f"{inp.base}-{inp.component}-{index}-"
    runner, _, ordinal = name.removeprefix(prefix).rpartition("-")
    return runner, int(ordinal)


def step_in_place(
    inp: Inputs,
    row: Row,
    pods: list[RolloutPod],
    data: RevisionData,
    target: str,
    blocks: list[retry.Block],
    out: Plan,
) -> tuple[Row, list[retry.Block]]:
    """Out of rotation (unless markNotReadyDuringLifecycle is false), patch the images, back in."""
    expected = own_names(inp, row["index"], data, active(row))
    current = [p for p in pods if p.name in expected and not p.view.terminating]
    if not current:
        # The pod is gone: nothing to update in place, recreate it instead.
        op = {**row["operation"], "step": DRAIN}
        return step_drain(inp, {**row, "operation": op}, pods, data, target, blocks, out)
    pod = current[0]
    wanted = inplace.images(data)
    patched = all(pod.images.get(n) == i for n, i in wanted.items()) and pod.view.revision_hash == digest(
        target
    )
    if not patched:
        if inp.strategy.mark_not_ready and pod.view.gate == "True":
            out.close_gates.append(pod.name)
        elif not inp.strategy.mark_not_ready or pod.view.drained or not pod.view.ready:
            out.image_patches.append((pod.name, digest(target)))
        return row, blocks
    failure = clock.attempt_failure(inp, row, current, out)
    if failure is not None:
        announce_failed(inp, row, failure, out)
        new = {**row, "phase": "Failed", "lastFailure": failure, "runningRevision": target}
        return new, fail_block(inp, target, failure, blocks, out)
    open_when_ready(current, 1, out)
    if settled(inp, current, out):
        return finish(inp, row, target, activeOrdinal=active(row)), succeeded_block(target, blocks)
    return row, blocks
