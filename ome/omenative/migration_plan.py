"""Surge migration of one Instance (pure): one pass over a replica's `status.migrations` records.

States of a record (`phase`) and their transitions; one record of a component moves at a time, oldest
first, and the others wait in Accepted:

    (a request under mode Never is recorded at intake already Failed, MigrationRequestRejected: `intake`)
    Accepted --mode Never (set after the request was taken)--> Failed (MigrationRequestRejected)
    Accepted --deadline passed--> Failed (MigrationExpired, "deadline exceeded in phase Accepted: ...")
    Accepted --no lifecycle.audit caps--> Accepted (MigrationPolicyUnconfigured, once)
    Accepted --source gone--> Failed (MigrationRequestRejected)
    Accepted --from_node hosts none of the source's pods--> Failed (MigrationFromNodeMismatch + Rejected)
    Accepted --the source's revision can only run on from_node--> Failed (MigrationNodeAffinityConflict
                        + Rejected)
    Accepted --maxMigrationsPerWindow reached--> Failed (RateLimited + Rejected)
    Accepted --another move runs, paused, the source busy or not Ready--> Accepted (waits)
    (a pause holds every record, its deadline too: one that passed during the pause fails on resume)
    Accepted --start--> SurgePending (MigrationRequestAccepted): the source row goes Migrating, a surge
                        row (Creating, operation Migrate/MigrationSurge) takes the lowest unused index
    SurgePending --every surge pod serving for minReadySeconds, not paused--> SurgeReady
    SurgePending --deadline passed--> Failed (MigrationExpired), surge cleaned up, source back
    SurgePending --a surge pod wedged past stuckPodGracePeriod--> Failed (MigrationSurgeWedged), likewise
    SurgeReady --> Draining: the source's serving gates close, drained pods are deleted
    Draining --deadline passed, the source not drained--> Failed (MigrationExpired), likewise
    Draining --the source's pods gone--> Completed ("migrated to instance=<surge>", MigrationCompleted):
                        the source row goes, the surge row becomes a plain Ready Instance
    Completed / Failed / Relocated --older than the audit window--> pruned from status

Event and record texts are in `ome.omenative.migration_events`.

The serving count never drops: the source leaves rotation only after the surge serves. A failed move
after the surge started removes the surge (its row marked MigrationSurgeCleanup until its pods are
gone) and the source returns to Ready, or to Failed when its pods aren't ready.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from ome.omenative import instance_names as names
from ome.omenative import migration_events as ev
from ome.omenative import rollout_types as rt
from ome.omenative.pods_view import TERMINAL_WAITING_REASONS as WEDGED
from ome.omenative.pods_view import format_time, go_duration, parse_time
from ome.omenative.revisions import RevisionData
from ome.omenative.rollout_pods import RolloutPod, serving_for

Row = dict[str, Any]
Record = dict[str, Any]

ACCEPTED, SURGE_PENDING, SURGE_READY, DRAINING = "Accepted", "SurgePending", "SurgeReady", "Draining"
COMPLETED, FAILED, RELOCATED = "Completed", "Failed", "Relocated"
TERMINAL: Final = frozenset({COMPLETED, FAILED, RELOCATED})
ACTIVE: Final = frozenset({SURGE_PENDING, SURGE_READY, DRAINING})

MIGRATE: Final = "Migrate"
SOURCE_STEP: Final = "MigrationSource"
SURGE_STEP: Final = "MigrationSurge"
CLEANUP_STEP: Final = "MigrationSurgeCleanup"

_HOSTNAME: Final = "kubernetes.io/hostname"
NEVER_MESSAGE: Final = ev.NEVER_MESSAGE
UNCONFIGURED_MESSAGE: Final = ev.UNCONFIGURED_MESSAGE
ACCEPTED_EXPIRED: Final = ev.EXPIRY_BLOCKERS[ACCEPTED]
SURGE_EXPIRED: Final = ev.EXPIRY_BLOCKERS[SURGE_PENDING]
DRAIN_EXPIRED: Final = ev.EXPIRY_BLOCKERS[DRAINING]
ALLOCATED_MESSAGE: Final = "surge allocated; waiting for surge pods"


@dataclass(frozen=True, slots=True)
class Caps:
    """lifecycle.audit: all three set and above zero, else None (requests wait)."""

    max_per_window: int
    window: float
    max_in_flight: int


@dataclass(frozen=True, slots=True)
class Inputs:
    namespace: str
    replica: str
    base: str
    component: str
    records: Sequence[Record]
    rows: Sequence[Row]
    pods: Sequence[RolloutPod]
    nodes: Mapping[str, str]
    """Pod name -> spec.nodeName (absent while unscheduled)."""
    revisions: Mapping[str, RevisionData]
    now: datetime
    mode: str = "Auto"
    caps: Caps | None = None
    min_ready_seconds: int = 0
    paused: bool = False
    stuck_grace: float | None = None
    blocked: Mapping[int, str] = field(default_factory=dict)
    """Surge indexes whose pod creation the API server refused this pass, with the refused pod's name."""


@dataclass(slots=True)
class Plan:
    records: list[Record] = field(default_factory=list)
    rows: dict[int, Row] = field(default_factory=dict)
    removed: list[int] = field(default_factory=list)
    creates: list[rt.PodCreate] = field(default_factory=list)
    avoid: dict[int, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    """Surge index -> (node it must not use, nodes it should prefer)."""
    deletes: list[str] = field(default_factory=list)
    open_gates: list[str] = field(default_factory=list)
    close_gates: list[str] = field(default_factory=list)
    events: list[rt.Event] = field(default_factory=list)
    finished: list[Record] = field(default_factory=list)
    """Records that reached a terminal phase this pass (for the audit ConfigMap and the history)."""
    wake_after: float | None = None

    def wake(self, seconds: float) -> None:
        seconds = max(seconds, 0.5)
        self.wake_after = seconds if self.wake_after is None else min(self.wake_after, seconds)


def surge_row(row: Row) -> bool:
    """A migration's surge Instance: the migration controller's, never counted when scaling."""
    op = row.get("operation") or {}
    return op.get("type") == MIGRATE and op.get("step") in (SURGE_STEP, CLEANUP_STEP)


def accepted_record(
    uuid: str, component_instance: int, from_node: str, hints: Sequence[str], reason: str,
    now: datetime, timeout: float | None,
) -> Record:
    """A request as OME takes it: Accepted, deadline = now + instanceReadyTimeout (now when unset)."""
    record: Record = {
        "requestUUID": uuid,
        "trigger": "Manual",
        "sourceInstance": component_instance,
        "fromNode": from_node,
        "phase": ACCEPTED,
        "startedAt": format_time(now),
        "deadline": format_time(now + timedelta(seconds=timeout or 0)),
    }
    if hints:
        record["hintTargetNodes"] = list(hints)
    if reason:
        record["reason"] = reason
    return record


def mode_of(lifecycle: Mapping[str, Any]) -> str:
    """The component's migrationPolicy mode (the replica's spec carries the effective one); Auto unset."""
    return str((lifecycle.get("migrationPolicy") or {}).get("mode") or "Auto")


def intake(
    uuid: str, component_instance: int, from_node: str, hints: Sequence[str], reason: str,
    now: datetime, timeout: float | None, mode: str,
) -> tuple[Record, list[ev.Event]]:
    """The record a valid request starts as, and the events it gets at once. Under mode Never it is
    born Failed (started = completed = deadline = now) with its rejection, never Accepted for a pass."""
    if mode != "Never":
        return accepted_record(uuid, component_instance, from_node, hints, reason, now, timeout), []
    record = accepted_record(uuid, component_instance, from_node, hints, reason, now, None)
    record.update(phase=FAILED, message=NEVER_MESSAGE, completedAt=format_time(now), succeeded=False)
    return record, ev.rejection(ev.REJECTED, uuid, NEVER_MESSAGE)


def plan(inp: Inputs) -> Plan:
    out = Plan()
    rows = {int(r["index"]): dict(r) for r in inp.rows}
    pods: dict[int, list[RolloutPod]] = {}
    for pod in inp.pods:
        pods.setdefault(pod.index, []).append(pod)
    _clean_orphans(inp, rows, pods, out)
    records = [dict(r) for r in inp.records]
    ordered = sorted(range(len(records)), key=lambda i: (records[i].get("startedAt") or "", i))
    for i in ordered:
        rec = records[i]
        if rec.get("phase") in ACTIVE:
            records[i] = _step_active(inp, rec, rows, pods, out)
    for i in ordered:
        rec = records[i]
        if rec.get("phase") == ACCEPTED:
            records[i] = _step_accepted(inp, rec, records, rows, pods, out)
    out.records = _prune(inp, records)
    return out


# -- Accepted ---------------------------------------------------------------------------------


def _step_accepted(
    inp: Inputs, rec: Record, records: list[Record], rows: dict[int, Row],
    pods: dict[int, list[RolloutPod]], out: Plan,
) -> Record:
    uuid, index = rec["requestUUID"], int(rec["sourceInstance"])
    if inp.mode == "Never":
        return _fail(inp, rec, NEVER_MESSAGE, ev.REJECTED, out)
    if inp.paused:
        return rec  # held until resumed, the deadline included (the resume wakes this pass)
    deadline = parse_time(rec.get("deadline"))
    if deadline is None or inp.now >= deadline:
        return _expire(inp, rec, ACCEPTED_EXPIRED, None, out)
    out.wake((deadline - inp.now).total_seconds())
    if inp.caps is None:
        if rec.get("message") != UNCONFIGURED_MESSAGE:
            out.events.append((ev.WARNING, ev.UNCONFIGURED, ev.held(uuid)))
            rec = {**rec, "message": UNCONFIGURED_MESSAGE}
        return rec
    if rec.get("message") == UNCONFIGURED_MESSAGE:
        rec = {k: v for k, v in rec.items() if k != "message"}
    source = rows.get(index)
    if source is None or surge_row(source):
        return _fail(inp, rec, ev.SOURCE_MISSING, ev.REJECTED, out)
    live = [p for p in pods.get(index, []) if not p.view.terminating]
    on = sorted({n for p in live if (n := inp.nodes.get(p.name))})
    from_node = rec.get("fromNode") or ""
    data = inp.revisions.get(names.hash_of_revision(source.get("runningRevision") or ""))
    gang = data is not None and data.multi_pod
    if any(not inp.nodes.get(p.name) for p in live):
        return rec  # a pod not yet scheduled: judge from_node once every pod has a node
    if gang:
        mismatch = bool(on) and from_node not in on  # a gang spans nodes; from_node must host one
    else:
        mismatch = len(on) > 1 or (bool(on) and on[0] != from_node)
    if mismatch:
        return _fail(inp, rec, ev.from_node_mismatch(from_node, on, gang), ev.FROM_NODE_MISMATCH, out)
    if data is not None and from_node and pinned(data, from_node):
        return _fail(inp, rec, ev.affinity_conflict(from_node), ev.AFFINITY_CONFLICT, out)
    if any(r.get("phase") in ACTIVE for r in records) or inp.paused or _busy(rows):
        return rec
    if source.get("phase") != "Ready" or source.get("operation") or not on:
        return rec
    started = [
        t for r in records
        if (t := parse_time(r.get("allocatedAt"))) is not None
        and (inp.now - t).total_seconds() < inp.caps.window
    ]
    if len(started) >= inp.caps.max_per_window:
        message = ev.rate_cap(len(started), inp.caps.max_per_window, go_duration(inp.caps.window))
        return _fail(inp, rec, message, ev.RATE_LIMITED, out)
    return _start(inp, rec, source, rows, pods, out)


def pinned(data: RevisionData, node: str) -> bool:
    """The revision's pods can only run on `node`: nodeName, a hostname nodeSelector, or required node
    affinity whose every term allows only that hostname."""
    for runner in data.runners:
        spec = (runner.template or {}).get("spec") or {}
        if spec.get("nodeName") == node or (spec.get("nodeSelector") or {}).get(_HOSTNAME) == node:
            return True
        required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                    .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
        terms = required.get("nodeSelectorTerms") or []
        only = [{"key": _HOSTNAME, "operator": "In", "values": [node]}]
        if terms and all(
            any({**e, "values": sorted(set(e.get("values") or []))} == only[0]
                for e in t.get("matchExpressions") or [])
            for t in terms
        ):
            return True
    return False


def _busy(rows: Mapping[int, Row]) -> bool:
    """An update's surge (or another Instance operation that owns a second index) is in flight."""
    return any(
        r.get("phase") == "Updating" or surge_row(r)
        or (r.get("operation") or {}).get("step") in ("GangSurgeTarget", "GangSurgeTargetCleanup")
        for r in rows.values()
    )


def _start(
    inp: Inputs, rec: Record, source: Row, rows: dict[int, Row], pods: Mapping[int, list[RolloutPod]],
    out: Plan,
) -> Record:
    index = int(source["index"])
    taken = set(rows) | {i for i, p in pods.items() if p}
    surge = 0
    while surge in taken:
        surge += 1
    now = format_time(inp.now)
    uuid = rec["requestUUID"]
    op_base = {"startedAt": now, "lastProgressAt": now, "deadline": rec["deadline"], "type": MIGRATE}
    moving = {k: v for k, v in source.items() if k not in ("operation",)}
    moving.update(phase="Migrating",
                  operation={**op_base, "id": f"{index}-{source.get('incarnation', 1)}-migrate",
                             "step": SOURCE_STEP, "surgeIndex": surge, "requestUUID": uuid})
    revision = source.get("runningRevision")
    new_row: Row = {
        "index": surge, "incarnation": 1, "phase": "Creating",
        "runningRevision": revision, "targetRevision": revision,
        "operation": {**op_base, "id": f"{surge}-1-migration-surge", "step": SURGE_STEP, "requestUUID": uuid},
    }
    rows[index] = out.rows[index] = moving
    rows[surge] = out.rows[surge] = new_row
    out.events.append((ev.NORMAL, ev.ACCEPTED,
                       ev.accepted(inp.component, index, uuid, rec.get("fromNode") or "", surge)))
    _create_surge(inp, rec, new_row, pods, out)
    out.wake(1.0)
    return {**rec, "phase": SURGE_PENDING, "surgeInstance": surge, "allocatedAt": now,
            "message": ALLOCATED_MESSAGE}


# -- a move in flight ---------------------------------------------------------------------------


def _step_active(
    inp: Inputs, rec: Record, rows: dict[int, Row], pods: dict[int, list[RolloutPod]], out: Plan
) -> Record:
    index, surge = int(rec["sourceInstance"]), int(rec.get("surgeInstance", -1))
    source, target = rows.get(index), rows.get(surge)
    phase = rec["phase"]
    if phase == SURGE_PENDING:
        if target is None or not surge_row(target):
            return _abandon(inp, rec, "surge instance lost", ev.REJECTED, rows, pods, out)
        deadline = parse_time(rec.get("deadline"))
        if deadline is not None and inp.now >= deadline and not inp.paused:
            return _abandon(inp, rec, SURGE_EXPIRED, ev.EXPIRED, rows, pods, out)
        wedged = _wedged(inp, pods.get(surge, []))
        if wedged is not None:
            message = f"surge pod {wedged.name} wedged in {wedged.waiting_reason} past the stuck-pod grace"
            return _abandon(inp, rec, message, ev.WEDGED, rows, pods, out)
        if surge in inp.blocked:
            # Each refused create is reported (the recorder folds repeats into a count).
            out.events.append((ev.WARNING, ev.CREATE_BLOCKED,
                               ev.create_blocked(rec["requestUUID"], inp.blocked[surge])))
        if deadline is not None:
            out.wake((deadline - inp.now).total_seconds())
        expected = _expected(inp, target)
        live = [p for p in pods.get(surge, []) if not p.view.terminating and p.name in expected]
        _create_surge(inp, rec, target, pods, out)
        if len(live) == len(expected) and all(p.view.containers_ready for p in live):
            out.open_gates += [p.name for p in live if p.view.gate != "True"]
        whole = len(live) >= len(expected)
        if not whole or not serving_for(live, inp.min_ready_seconds, inp.now, out.wake) or inp.paused:
            return rec
        rec = {**rec, "phase": SURGE_READY, "message": f"surge instance={surge} ready"}
        phase = SURGE_READY
    if phase == SURGE_READY:
        rec = {**rec, "phase": DRAINING, "message": f"draining source instance={index}"}
    if source is None or not pods.get(index):
        return _complete(inp, rec, rows, out)
    deadline = parse_time(rec.get("deadline"))
    late = deadline is not None and inp.now >= deadline and not inp.paused
    if phase == DRAINING and late and not _drained(pods.get(index, [])):
        return _abandon(inp, rec, DRAIN_EXPIRED, ev.EXPIRED, rows, pods, out)
    for pod in pods.get(index, []):
        if pod.view.terminating:
            continue
        if pod.view.phase == "Running" and pod.view.gate is not None and pod.view.gate != "False":
            out.close_gates.append(pod.name)
        elif pod.view.drained or pod.view.gate is None:
            out.deletes.append(pod.name)
    out.wake(2.0)
    return rec


def _complete(inp: Inputs, rec: Record, rows: dict[int, Row], out: Plan) -> Record:
    index, surge = int(rec["sourceInstance"]), int(rec["surgeInstance"])
    if index in rows:
        rows.pop(index)
        out.rows.pop(index, None)
        out.removed.append(index)
    target = rows.get(surge)
    revision = ""
    if target is not None:
        revision = target.get("runningRevision") or ""
        done = {k: v for k, v in target.items() if k != "operation"}
        done.update(phase="Ready", readySince=done.get("readySince") or format_time(inp.now))
        rows[surge] = out.rows[surge] = done
    now = format_time(inp.now)
    out.events.append((ev.NORMAL, ev.COMPLETED,
                       ev.completed(rec["requestUUID"], inp.component, index, surge, revision)))
    done_rec = {**rec, "phase": COMPLETED, "message": f"migrated to instance={surge}", "completedAt": now,
                "succeeded": True}
    out.finished.append(done_rec)
    return done_rec


def _abandon(
    inp: Inputs, rec: Record, message: str, reason: str, rows: dict[int, Row],
    pods: Mapping[int, list[RolloutPod]], out: Plan,
) -> Record:
    """A failed move: the surge goes (row kept as cleanup until its pods are gone), the source serves on."""
    index, surge = int(rec["sourceInstance"]), int(rec.get("surgeInstance", -1))
    source = rows.get(index)
    if source is not None and (source.get("operation") or {}).get("type") == MIGRATE:
        back = {k: v for k, v in source.items() if k != "operation"}
        ready = [p for p in pods.get(index, []) if p.view.containers_ready and not p.view.terminating]
        back["phase"] = "Ready" if ready else "Failed"
        rows[index] = out.rows[index] = back
        # A drain that started is undone: the source serves again.
        out.open_gates += [p.name for p in ready if p.view.gate == "False"]
    target = rows.get(surge)
    if target is not None and surge_row(target):
        cleanup = {**target, "operation": {**(target.get("operation") or {}), "step": CLEANUP_STEP}}
        rows[surge] = out.rows[surge] = cleanup
    if reason == ev.EXPIRED:
        return _expire(inp, rec, message, surge, out)
    if reason == ev.WEDGED:
        out.events.append((ev.WARNING, ev.WEDGED, ev.wedged(rec["requestUUID"], message, surge)))
        return _close(inp, rec, message, out)
    return _fail(inp, rec, message, reason, out)


def _fail(inp: Inputs, rec: Record, message: str, reason: str, out: Plan) -> Record:
    out.events += ev.rejection(reason, rec["requestUUID"], message)
    return _close(inp, rec, message, out)


def _expire(inp: Inputs, rec: Record, blocker: str, surge: int | None, out: Plan) -> Record:
    out.events.append((ev.WARNING, ev.EXPIRED, ev.expired(rec["requestUUID"], blocker, surge)))
    return _close(inp, rec, blocker, out)


def _close(inp: Inputs, rec: Record, message: str, out: Plan) -> Record:
    done = {**rec, "phase": FAILED, "message": message, "completedAt": format_time(inp.now),
            "succeeded": False}
    out.finished.append(done)
    return done


def _clean_orphans(
    inp: Inputs, rows: dict[int, Row], pods: Mapping[int, list[RolloutPod]], out: Plan
) -> None:
    """Cleanup surge rows: delete their pods; the row goes with the last one."""
    for index, row in list(rows.items()):
        if (row.get("operation") or {}).get("step") != CLEANUP_STEP:
            continue
        left = pods.get(index, [])
        out.deletes += [p.name for p in left if not p.view.terminating]
        if not left:
            rows.pop(index)
            out.removed.append(index)
        else:
            out.wake(2.0)


# -- helpers ----------------------------------------------------------------------------------


def _expected(inp: Inputs, row: Row) -> set[str]:
    data = inp.revisions.get(names.hash_of_revision(row.get("runningRevision") or ""))
    if data is None:
        return set()
    return rt.own_names(_rt_inputs(inp), int(row["index"]), data)


def _rt_inputs(inp: Inputs) -> Any:
    """own_names only reads base and component."""
    return _Names(inp.base, inp.component)


@dataclass(frozen=True, slots=True)
class _Names:
    base: str
    component: str


def _create_surge(
    inp: Inputs, rec: Record, row: Row, pods: Mapping[int, list[RolloutPod]], out: Plan
) -> None:
    index = int(row["index"])
    data = inp.revisions.get(names.hash_of_revision(row.get("runningRevision") or ""))
    if data is None:
        return
    have = {p.name for p in pods.get(index, [])}
    digest = names.hash_of_revision(row.get("runningRevision") or "")
    for runner in data.runners:
        count = runner.size if data.multi_pod else 1
        for ordinal in range(count):
            name = names.pod_name(inp.base, inp.component, index, runner.name, ordinal)
            if name not in have:
                out.creates.append(rt.PodCreate(index, 1, digest, runner.name, ordinal))
    if out.creates:
        out.avoid[index] = (rec.get("fromNode") or "", tuple(rec.get("hintTargetNodes") or ()))


def _drained(pods: Sequence[RolloutPod]) -> bool:
    """Every source pod is out of rotation (or already going): the drain's tail only deletes."""
    return all(p.view.terminating or p.view.drained or p.view.gate is None for p in pods)


def _wedged(inp: Inputs, pods: Sequence[RolloutPod]) -> RolloutPod | None:
    if inp.stuck_grace is None:
        return None
    for pod in pods:
        if pod.waiting_reason in WEDGED and pod.created is not None:
            if (inp.now - pod.created).total_seconds() >= inp.stuck_grace:
                return pod
    return None


def _prune(inp: Inputs, records: list[Record]) -> list[Record]:
    """Finished records stay for the audit window (or an hour without caps)."""
    window = inp.caps.window if inp.caps is not None else 3600.0
    kept = []
    for rec in records:
        done = parse_time(rec.get("completedAt"))
        if rec.get("phase") in TERMINAL and done is not None and (inp.now - done).total_seconds() >= window:
            continue
        kept.append(rec)
    return kept
