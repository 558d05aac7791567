"""Instance planning: desired vs actual Instances, one pass of each Instance's phase machine (pure).

An Instance is a status row plus the pods labelled with its index. Each pass reads the previous rows
and the cached pods and returns the new rows and the writes to make: pods to create, serving gates to
open or close, pods to delete. Pod names repeat across incarnations, so a pod is only created once
the pod it replaces is gone; drained means the serving gate is False and Ready followed it.

Phases: Creating -> Ready; Ready -> Restarting (next incarnation) when a pod of a multi-pod Instance
fails or goes missing under RecreateInstanceOnPodRestart; Ready -> Pending when every pod is gone
under None; Deleting drains then deletes (one DrainOverdue warning past its deadline). Creating or
Restarting -> Failed (one InstanceFailed warning) when, its pod creates not held: a pod's container waits
in a terminal kubelet reason and the pod is older than stuckPodGracePeriod; a pod stays unschedulable
longer than unschedulableGracePeriod (while one waits for room the operation's clock stops:
`operation_holds`); or the operation passes its deadline. A failed Create is retried
at the same incarnation after a backoff that grows with each attempt, unless it rebuilt an Instance that
already ran its revision.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ome.omenative import instance_names as names
from ome.omenative import operation_holds, scale_down_batching
from ome.omenative.pods_view import PodView, format_time, go_duration, parse_time
from ome.omenative.revisions import RevisionData

Row = dict[str, Any]
Event = tuple[str, str, str]
REBUILD = "Rebuild"


@dataclass(frozen=True, slots=True)
class Context:
    base: str
    component: str
    desired: int
    update_revision: str
    update_hash: str
    revisions: Mapping[str, RevisionData]
    """Revision data by hash: every revision an Instance may run."""
    now: datetime
    ready_timeout: float | None
    drain_timeout: float
    min_ready_seconds: int = 0
    restart_policy: str | None = None
    """lifecycle.restartPolicy; None means the shape's default."""
    retry_delay: float = 60.0
    """Backoff before the first new attempt of a failed Create (updateRetry.initialDelay)."""
    retry_multiplier: float = 2.0
    retry_max_delay: float = 1800.0
    paused: bool = False
    """spec.paused: no new Instance starts and a Pending one waits (one already Creating finishes)."""
    replica: str = ""
    """`namespace/name` of the InferenceReplica, for the messages that name it."""
    start_hash: str | None = None
    """The revision a starting Instance runs when not `update_hash`: the update revision is held
    (`ome.omenative.held_revision`)."""
    scale_down_budget: int | None = None
    """lifecycle.scaleDownPodBatchSize (`ome.omenative.scale_down_batching`); None: unbounded."""
    scale_down_requeue: float | None = None
    """lifecycle.scaleDownRequeueInterval in seconds: the fallback wake while scale-down work remains."""
    stuck_grace: float | None = None
    """lifecycle.stuckPodGracePeriod in seconds: a wedged pod older than this fails a starting Instance;
    None: off (only the deadline does)."""
    unschedulable_grace: float | None = None
    """lifecycle.unschedulableGracePeriod in seconds: a pod unschedulable this long fails a starting
    Instance; None: off."""


@dataclass(frozen=True, slots=True)
class PodCreate:
    index: int
    incarnation: int
    revision_hash: str
    names: frozenset[str]


@dataclass(slots=True)
class Plan:
    rows: list[Row] = field(default_factory=list)
    creates: list[PodCreate] = field(default_factory=list)
    open_gates: list[str] = field(default_factory=list)
    close_gates: list[str] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    wake_after: float | None = None
    scale_down: scale_down_batching.Wave | None = None
    """This pass's scale-down wave (None: nothing to scale down)."""

    def wake(self, seconds: float) -> None:
        seconds = max(seconds, 0.5)
        self.wake_after = seconds if self.wake_after is None else min(self.wake_after, seconds)


def plan(ctx: Context, rows: Iterable[Row], pods: Iterable[PodView]) -> Plan:
    by_index: dict[int, list[PodView]] = {}
    for pod in pods:
        by_index.setdefault(pod.index, []).append(pod)
    previous = {int(r["index"]): r for r in rows}
    keep, drop = choose(ctx.desired, previous, by_index)
    if ctx.paused:
        keep = {i for i in keep if i in previous or i in by_index}  # none starts during a pause
    out = Plan()
    wave = scale_down_batching.select(previous, drop, by_index, ctx.scale_down_budget)
    if wave.in_progress:
        out.scale_down = wave
        if ctx.scale_down_requeue is not None:
            out.wake(ctx.scale_down_requeue)
    for index in sorted(keep | drop | set(previous)):
        row = previous.get(index) or adopt_row(ctx, index, by_index.get(index, []))
        if index in wave.admitted:
            row = start_delete(ctx, row)
        elif index in wave.deferred and scale_down_batching.deleting(row):
            out.rows.append(counted(ctx, row, by_index.get(index, []), None))  # waits outside the wave
            continue
        creates = len(out.creates)
        new = step(ctx, row, by_index.get(index, []), out)
        if index in wave.deferred:
            del out.creates[creates:]  # an extra waiting to be deleted gets no new pod
        if new is None:
            out.removed.append(index)
        else:
            out.rows.append(new)
    return out


def choose(
    desired: int, rows: Mapping[int, Row], pods: Mapping[int, list[PodView]]
) -> tuple[set[int], set[int]]:
    """Indices to keep and to remove: Ready Instances first, lowest indices first; new ones take the
    lowest free indices. Deleting Instances hold their index until their pods are gone."""
    deleting = {i for i, r in rows.items() if r.get("phase") == "Deleting" or replacement(r)}
    live = sorted(
        (set(rows) | set(pods)) - deleting, key=lambda i: (rows.get(i, {}).get("phase") != "Ready", i)
    )
    keep, drop = set(live[:desired]), set(live[desired:])
    taken = set(rows) | set(pods)
    index = 0
    while len(keep) < desired:
        if index not in taken:
            keep.add(index)
        index += 1
    return keep, drop


def replacement(row: Row) -> bool:
    """A gang surge's replacement Instance (`ome.omenative.rollout_gang`): the rollout's, never counted
    when scaling; likewise a migration's surge (`ome.omenative.migration_plan`)."""
    return (row.get("operation") or {}).get("step") in (
        "GangSurgeTarget", "GangSurgeTargetCleanup", "MigrationSurge", "MigrationSurgeCleanup"
    )


def adopt_row(ctx: Context, index: int, pods: list[PodView]) -> Row:
    """A row for a new Instance, or for pods whose row was lost (their labels say who they are)."""
    if pods:
        incarnation = max(p.incarnation for p in pods) or 1
        digest = next((p.revision_hash for p in pods if p.revision_hash in ctx.revisions), starting_hash(ctx))
    else:
        incarnation, digest = 1, starting_hash(ctx)
    revision = names.revision_name(ctx.base, ctx.component, digest)
    row: Row = {
        "index": index,
        "incarnation": incarnation,
        "phase": "Creating",
        "runningRevision": revision,
        "targetRevision": revision,
    }
    return with_operation(ctx, row, "Create", "CreatePods", ctx.ready_timeout)


def starting_hash(ctx: Context) -> str:
    return ctx.start_hash or ctx.update_hash


def start_off_held(ctx: Context, row: Row, pods: list[PodView]) -> Row:
    """An Instance on the held update revision with no pod left (not yet created, lost and repaired or
    rebuilt, deleted for a retry) starts over on the revision new Instances start on instead."""
    start = starting_hash(ctx)
    if start == ctx.update_hash or row.get("phase") not in ("Creating", "Pending", "Failed", "Ready"):
        return row
    if data_hash(row) != ctx.update_hash or any(not p.terminating for p in pods):
        return row
    revision = names.revision_name(ctx.base, ctx.component, start)
    return {**row, "runningRevision": revision, "targetRevision": revision}


def with_operation(ctx: Context, row: Row, kind: str, step_name: str, timeout: float | None) -> Row:
    now = format_time(ctx.now)
    op: Row = {
        "id": f"{row['index']}-{row['incarnation']}-{kind.lower()}",
        "type": kind,
        "step": step_name,
        "startedAt": now,
        "lastProgressAt": now,
    }
    if timeout is not None:
        op["deadline"] = format_time(ctx.now + timedelta(seconds=timeout))
    return {**row, "operation": op}


def start_delete(ctx: Context, row: Row) -> Row:
    if row.get("phase") == "Deleting":
        return row
    row = {k: v for k, v in row.items() if k != "readySince"}
    return with_operation(
        ctx, {**row, "phase": "Deleting"}, "Delete", "Drain", ctx.ready_timeout or ctx.drain_timeout
    )


def step(ctx: Context, row: Row, pods: list[PodView], out: Plan) -> Row | None:
    phase = row.get("phase")
    if phase == "Deleting":
        return step_deleting(ctx, row, pods, out)
    if replacement(row) or phase == "Updating":
        return counted(ctx, row, pods, None)  # the rollout's (ome.omenative.rollout_plan)
    row = start_off_held(ctx, row, pods)
    data = ctx.revisions.get(names.hash_of_revision(row.get("runningRevision") or ""))
    if data is None:
        return counted(ctx, row, pods, None)  # its revision is gone; nothing to render from
    if phase == "Ready":
        row = check_ready(ctx, row, pods, data, out)
    if phase == "Failed" and retryable(row) and not serving_whole(ctx, row, pods, data):
        due = retry_at(ctx, row)
        if ctx.now >= due:
            return counted(ctx, retry(ctx, row, pods, data, out), pods, data)
        out.wake((due - ctx.now).total_seconds())
    if row.get("phase") in ("Creating", "Restarting", "Pending", "Failed"):
        row = converge(ctx, row, pods, data, out)
    elif row.get("phase") == "Ready":
        repair_ready(ctx, row, pods, data, out)
    return counted(ctx, row, pods, data)


def expected_names(ctx: Context, index: int, data: RevisionData, ordinal: int = 0) -> set[str]:
    """An Instance's pod names; a single-pod Instance's pod is at its `activeOrdinal` (a SurgeThenDrain
    update moves it to the other ordinal: see `ome.omenative.rollout_plan`)."""
    if not data.multi_pod:
        return {names.pod_name(ctx.base, ctx.component, index, data.runners[0].name, ordinal)}
    return {
        names.pod_name(ctx.base, ctx.component, index, r.name, o) for r in data.runners for o in range(r.size)
    }


def active_ordinal(row: Row) -> int:
    return int(row.get("activeOrdinal") or 0)


def members(row: Row, pods: list[PodView]) -> list[PodView]:
    return [p for p in pods if p.incarnation == row["incarnation"] and not p.terminating]


def converge(ctx: Context, row: Row, pods: list[PodView], data: RevisionData, out: Plan) -> Row:
    """Create an Instance's pods at its incarnation, open the gates together, and finish when every
    pod serves (for minReadySeconds); stale pods drain first since names repeat."""
    expected = expected_names(ctx, row["index"], data, active_ordinal(row))
    stale = [p for p in pods if p.incarnation != row["incarnation"] or p.name not in expected]
    drain(stale, out)
    current = members(row, pods)
    for pod in current:
        if pod.ended:  # a pod that ended mid-operation is recycled until the deadline
            out.deletes.append(pod.name)
            out.events.append(
                ("Warning", "TerminalPodRecycled", f"pod {pod.name} ended in phase {pod.phase}")
            )
    if stale and row.get("phase") == "Restarting":
        return found_orphans(ctx, row, stale, out)
    missing = expected - {p.name for p in pods}
    if missing and row.get("phase") == "Pending" and ctx.paused:
        return row  # a lost pod waits for the resume
    if missing:
        if row.get("phase") == "Pending":
            # A rebuild starts over at ordinal 0, as a new Instance does.
            row = {k: v for k, v in row.items() if k != "activeOrdinal"}
            expected = expected_names(ctx, row["index"], data)
            missing = expected - {p.name for p in pods}
            row = with_operation(ctx, {**row, "phase": "Creating"}, "Create", "CreatePods", ctx.ready_timeout)
            row["operation"]["reason"] = REBUILD  # it ran this revision: a failure is not retried
        out.creates.append(PodCreate(row["index"], row["incarnation"], data_hash(row), frozenset(missing)))
    healthy = [p for p in current if not p.ended and p.name in expected]
    if len(healthy) == len(expected) and all(p.containers_ready for p in healthy):
        out.open_gates += [p.name for p in healthy if p.gate != "True"]
    if len(healthy) == len(expected) and all(p.serving for p in healthy):
        return finish_if_settled(ctx, row, healthy, out)
    return check_pods(ctx, row, healthy, out) or check_deadline(ctx, row, out, expected, current)


def data_hash(row: Row) -> str:
    return names.hash_of_revision(row["runningRevision"])


def finish_if_settled(ctx: Context, row: Row, pods: list[PodView], out: Plan) -> Row:
    latest = max((parse_time(p.ready_since) or ctx.now) for p in pods)
    remaining = ctx.min_ready_seconds - (ctx.now - latest).total_seconds()
    if remaining > 0:
        out.wake(remaining)
        return row
    if row.get("phase") == "Restarting":
        out.events.append(
            (
                "Normal",
                "RestartCompleted",
                f"OMENative component={ctx.component} instance={row['index']} is Ready again "
                f"(incarnation={row['incarnation']})",
            )
        )
    done = {k: v for k, v in row.items() if k != "operation"}
    return {**done, "phase": "Ready", "readySince": format_time(ctx.now)}


def check_deadline(
    ctx: Context, row: Row, out: Plan, expected: set[str] | None = None, pods: Iterable[PodView] = ()
) -> Row:
    deadline = parse_time((row.get("operation") or {}).get("deadline"))
    if deadline is None or row.get("phase") == "Failed" or operation_holds.held(row):
        return row  # a hold stops the operation's clock (ome.omenative.operation_holds)
    if ctx.now >= deadline:
        failure = deadline_failure(ctx, expected or set(), list(pods))
        return fail(ctx, row, failure, deadline_cause(row, "Create", failure["reason"]), out)
    out.wake((deadline - ctx.now).total_seconds())
    return row


def check_pods(ctx: Context, row: Row, pods: list[PodView], out: Plan) -> Row | None:
    """The failed row when a pod of a starting Instance proves it cannot finish: a wedged container past
    the stuck-pod grace (from the pod's creation), else a pod unschedulable past its grace (from the
    PodScheduled transition). None otherwise, with a wake for the first grace to end. Ready Instances
    are `rollout_repair`'s; a held operation waits, as its deadline does."""
    starting = row.get("phase") in ("Creating", "Restarting")
    if not starting or (row.get("operation") or {}).get("type") not in operation_holds.OWN_TYPES:
        return None
    if operation_holds.creates_held(row):
        return None
    ends: list[datetime] = []
    pods = sorted(pods, key=lambda p: p.name)
    for pod in pods:
        wedge = pod.wedged
        due = grace_end(pod.created, ctx.stuck_grace) if wedge is not None else None
        if wedge is None or due is None:
            continue
        if ctx.now < due:
            ends.append(due)
            continue
        failure: Row = {"podName": pod.name, "containerName": wedge.container, "reason": wedge.reason,
                        "message": wedge.message, "time": format_time(ctx.now)}
        if pod.exit_code and pod.container == wedge.container:
            failure["exitCode"] = pod.exit_code  # the crash behind a CrashLoopBackOff
        return fail(ctx, row, failure, wedge.reason, out)  # v1.3's cause: the bare kubelet reason
    for pod in pods:
        due = grace_end(pod.unschedulable_since, ctx.unschedulable_grace)
        if due is None:
            continue
        if ctx.now < due:
            ends.append(due)
            continue
        message = pod.unschedulable_message
        failure = {"podName": pod.name, "reason": "Unschedulable", "message": message,
                   "time": format_time(ctx.now)}
        return fail(ctx, row, failure, f"Unschedulable: {message}" if message else "Unschedulable", out)
    if ends:
        out.wake((min(ends) - ctx.now).total_seconds())
    return None


def unschedulable_holds(rows: Iterable[Row], pods: Iterable[PodView]) -> dict[int, str]:
    """Instance index -> `Unschedulable` for each starting Instance (its own Create or Restart) that has a
    current pod the scheduler cannot place: its operation's clock stops while it waits for room."""
    waiting: dict[int, list[PodView]] = {}
    for pod in pods:
        if pod.unschedulable_since is not None and not pod.terminating:
            waiting.setdefault(pod.index, []).append(pod)
    out = {}
    for row in rows:
        index = int(row["index"])
        if (row.get("operation") or {}).get("type") in operation_holds.OWN_TYPES and members(
                row, waiting.get(index, [])):
            out[index] = operation_holds.UNSCHEDULABLE
    return out


def grace_end(since: str | None, grace: float | None) -> datetime | None:
    start = parse_time(since) if grace is not None else None
    return None if start is None or grace is None else start + timedelta(seconds=grace)


def fail(ctx: Context, row: Row, failure: Row, cause: str, out: Plan) -> Row:
    out.events.append(("Warning", "InstanceFailed",
                       instance_failed_message(ctx, int(row["index"]), failure["podName"], cause)))
    return {**row, "phase": "Failed", "lastFailure": {k: v for k, v in failure.items() if v is not None}}


def instance_failed_message(ctx: Context, index: int, pod: str, cause: str) -> str:
    """The InstanceFailed warning (troubleshoot-an-inferenceservice.md §Instances fail): names the Instance
    and its pod, and ends with the cause (a kubelet reason, `Unschedulable: ...`, `DeadlineExceeded: ...`)."""
    return failed_message(ctx.replica, ctx.component, index, pod, cause)


def deadline_cause(row: Row, default_type: str, detail: str | None = None) -> str:
    """The InstanceFailed cause of a missed deadline: the operation and step, and what was short."""
    operation = row.get("operation") or {}
    step = f"{operation.get('type', default_type)}/{operation.get('step', '')}"
    return f"DeadlineExceeded: {step} not Ready by its deadline" + (f" ({detail})" if detail else "")


def failed_message(replica: str, component: str, index: int, pod: str, cause: str) -> str:
    """`instance_failed_message` for a writer without a Context (`replica` is namespace/name): the
    rollout's update attempts fail Instances too."""
    return (f"InferenceReplica {replica} component={component} instance={index} escalated to "
            f'Phase=Failed (pod="{pod}"): {cause}')


def deadline_failure(ctx: Context, expected: set[str], pods: list[PodView]) -> Row:
    """lastFailure for a missed deadline: the first pod short of serving, and what it lacks."""
    by_name = {p.name: p for p in pods}
    reason, pod_name = "DeadlineExceeded", min(expected) if expected else ""
    for name in sorted(expected):
        pod = by_name.get(name)
        if pod is None or pod.phase != "Running":
            reason, pod_name = "DeadlineExceeded", name
            break
        if not pod.containers_ready:
            reason, pod_name = "ContainersNotReady", name
            break
        if not pod.serving:
            reason, pod_name = "ReadinessGateNotSatisfied", name
            break
    return {"podName": pod_name, "reason": reason, "time": format_time(ctx.now)}


def serving_whole(ctx: Context, row: Row, pods: list[PodView], data: RevisionData) -> bool:
    """Every pod of the Instance serves: it is never failed (nor retried) then."""
    serving = {p.name for p in members(row, pods) if p.serving}
    return expected_names(ctx, row["index"], data, active_ordinal(row)) <= serving


def retryable(row: Row) -> bool:
    """A failed Create is retried, unless it rebuilt an Instance that already ran its revision."""
    operation = row.get("operation") or {}
    return operation.get("type") == "Create" and operation.get("reason") != REBUILD


def retry_at(ctx: Context, row: Row) -> datetime:
    """The failure time plus the backoff of this attempt: delay x multiplier^retries, capped."""
    operation = row.get("operation") or {}
    failed = parse_time((row.get("lastFailure") or {}).get("time")) or parse_time(operation.get("deadline"))
    retries = int(operation.get("retryCount") or 0)
    delay = min(ctx.retry_delay * ctx.retry_multiplier**retries, ctx.retry_max_delay)
    return (failed or ctx.now) + timedelta(seconds=delay)


def retry(ctx: Context, row: Row, pods: list[PodView], data: RevisionData, out: Plan) -> Row:
    """A new attempt at the same incarnation: the old pods go first (their names repeat), then a
    fresh Create with its own deadline."""
    if pods:
        for pod in pods:
            if pod.serving:
                out.close_gates.append(pod.name)  # out of rotation first, deleted once it has left
            elif not pod.terminating:
                out.deletes.append(pod.name)
        return row
    retries = int((row.get("operation") or {}).get("retryCount") or 0) + 1
    fresh = with_operation(ctx, {**row, "phase": "Creating"}, "Create", "CreatePods", ctx.ready_timeout)
    fresh["operation"].update(id=f"{fresh['operation']['id']}-{retries}", retryCount=retries)
    return converge(ctx, fresh, [], data, out)


def drain(pods: Iterable[PodView], out: Plan) -> None:
    """Take pods out of rotation, and delete the ones that have left it."""
    for pod in pods:
        if pod.terminating:
            continue
        if pod.gate != "False" and pod.phase == "Running":
            out.close_gates.append(pod.name)
        elif pod.drained:
            out.deletes.append(pod.name)


def restart_policy(ctx: Context, data: RevisionData) -> str:
    if ctx.restart_policy:
        return ctx.restart_policy
    return "RecreateInstanceOnPodRestart" if data.multi_pod else "None"


def check_ready(ctx: Context, row: Row, pods: list[PodView], data: RevisionData, out: Plan) -> Row:
    """A Ready Instance whose pod failed, went missing or restarted after Ready."""
    expected = expected_names(ctx, row["index"], data, active_ordinal(row))
    current = {p.name: p for p in members(row, pods) if p.name in expected}
    if not current and not any(not p.terminating for p in pods):
        if restart_policy(ctx, data) == "None":
            return {k: v for k, v in row.items() if k not in ("readySince", "operation")} | {
                "phase": "Pending"
            }
    trouble = trigger(row, expected, current)
    if trouble is None or restart_policy(ctx, data) != "RecreateInstanceOnPodRestart":
        return row
    pod_name, why, failure = trouble
    incarnation = int(row["incarnation"]) + 1
    out.events.append(
        (
            "Warning",
            "RestartTriggered",
            f"OMENative component={ctx.component} instance={row['index']} restart triggered: "
            f"pod {pod_name} {why} (incarnation={incarnation})",
        )
    )
    restarted = {k: v for k, v in row.items() if k != "readySince"}
    restarted.update(phase="Restarting", incarnation=incarnation, lastFailure=failure)
    return with_operation(ctx, restarted, "Restart", "Drain", ctx.ready_timeout)


def trigger(row: Row, expected: set[str], current: Mapping[str, PodView]) -> tuple[str, str, Row] | None:
    since = parse_time(row.get("readySince"))
    for name in sorted(expected):
        pod = current.get(name)
        if pod is None:
            return name, "is missing", {"podName": name, "reason": "PodMissing"}
        if pod.ended:
            return name, f"is in phase {pod.phase}", {"podName": name, "reason": pod.phase}
        restarted = parse_time(pod.restarted_at) if pod.restarted_at is not None else None
        if pod.restarted_at is not None and (since is None or restarted is None or restarted >= since):
            failure: Row = {"podName": name, "containerName": pod.container, "reason": pod.restart_reason}
            if pod.exit_code is not None:
                failure["exitCode"] = pod.exit_code
            # As documented: "... restarted after Ready: OOMKilled (exit 137)" when the kubelet said why.
            cause = f": {pod.restart_reason}" if pod.restart_reason else ""
            if pod.exit_code is not None:
                cause += f" (exit {pod.exit_code})"
            return (
                name,
                f"container {pod.container} restarted after Ready{cause}",
                {k: v for k, v in failure.items() if v is not None},
            )
    return None


def repair_ready(ctx: Context, row: Row, pods: list[PodView], data: RevisionData, out: Plan) -> None:
    """Under None, replace ended or missing pods in place; keep ready pods in rotation."""
    expected = expected_names(ctx, row["index"], data, active_ordinal(row))
    # Extra pods (a failed update's surge pod) are the rollout's: never put in rotation here.
    current = [p for p in members(row, pods) if p.name in expected]
    for pod in current:
        if pod.ended:
            out.deletes.append(pod.name)
        elif pod.containers_ready and pod.gate != "True":
            out.open_gates.append(pod.name)
    missing = expected - {p.name for p in pods}
    if missing:
        out.creates.append(PodCreate(row["index"], row["incarnation"], data_hash(row), frozenset(missing)))


def step_deleting(ctx: Context, row: Row, pods: list[PodView], out: Plan) -> Row | None:
    """Drain every pod, delete it once out of rotation; the row goes with the last pod. A drain past
    its deadline goes on, with one DrainOverdue warning per drain."""
    if not pods:
        return None
    drain(pods, out)
    operation = row.get("operation") or {}
    deadline = parse_time(operation.get("deadline"))
    if deadline is not None and ctx.now < deadline:
        out.wake((deadline - ctx.now).total_seconds())
    elif deadline is not None:
        row = announce_overdue(ctx, row, pods, deadline, out)
    return counted(ctx, row, pods, None)


def found_orphans(ctx: Context, row: Row, stale: list[PodView], out: Plan) -> Row:
    """The FoundOrphan warning, once per restart: a pod without the incarnation label (made by hand, or
    by something other than OME) cannot be told from the new pods, so the restart waits until it is
    gone. `announced` holds `FoundOrphan@{operation id}`."""
    orphans = sorted(p.name for p in stale if p.incarnation == 0)
    entry = f"FoundOrphan@{(row.get('operation') or {}).get('id') or row.get('incarnation')}"
    announced = list(row.get("announced") or [])
    if not orphans or entry in announced:
        return row
    out.events.append(
        (
            "Warning",
            "FoundOrphan",
            f"OMENative component={ctx.component} instance={row['index']}: pod {', '.join(orphans)} has no "
            f"{names.INCARNATION_LABEL} label; the restart waits until it is gone",
        )
    )
    return {**row, "announced": sorted({*announced, entry})}


def announce_overdue(ctx: Context, row: Row, pods: list[PodView], deadline: datetime, out: Plan) -> Row:
    """The DrainOverdue event, once per drain: `announced` holds `DrainOverdue@{episode}` (the
    operation's id), stamped in the status write that follows the event."""
    episode = (row.get("operation") or {}).get("id") or str(row.get("incarnation"))
    entry = f"DrainOverdue@{episode}"
    announced = list(row.get("announced") or [])
    if entry in announced:
        return row
    left = sorted(p.name for p in pods)
    out.events.append(
        (
            "Warning",
            "DrainOverdue",
            f"OMENative component={ctx.component} instance={row['index']}: drain overdue by "
            f"{go_duration((ctx.now - deadline).total_seconds())} (deadline {format_time(deadline)}); "
            f"{len(left)} pod(s) still Terminating ({', '.join(left)})",
        )
    )
    return {**row, "announced": sorted({*announced, entry})}


def counted(ctx: Context, row: Row, pods: list[PodView], data: RevisionData | None) -> Row:
    new = {
        k: v
        for k, v in row.items()
        if k not in ("podCount", "servingPodCount", "availablePodCount", "admitted")
    }
    return {**new, **_counts(pods, row, ctx.min_ready_seconds, ctx.now)}


def _counts(pods: list[PodView], row: Row, min_ready: int, now: datetime) -> Row:
    current = members(row, pods)
    counts = {
        "podCount": len(current),
        "servingPodCount": sum(1 for p in current if p.serving),
        "availablePodCount": sum(1 for p in current if available(p, min_ready, now)),
        # "admitted": the Instance has its pods and none waits on a scheduling gate (the AOF `A` flag).
        "admitted": bool(current) and not any(p.gated for p in current),
    }
    return {k: v for k, v in counts.items() if v}  # zero is the absent default, as in ColumnarV2


def available(pod: PodView, min_ready: int, now: datetime) -> bool:
    """On the headless Service (it has an IP), not terminating, and Ready for minReadySeconds."""
    if not pod.has_ip or pod.terminating:
        return False
    if min_ready <= 0:
        return True
    since = parse_time(pod.ready_since)
    return since is not None and (now - since).total_seconds() >= min_ready
