"""Canary progression (pure): one canary group's step machine, from its pinned steps and what is ready.

The canary's state is `status.components.<primary>.canary` and `.rolloutPhase` of the group's primary
component (router when the group has it, else engine). Each step moves `capacity` of every member's
desired replicas (`minReplicas`; a percentage rounds up) to the canary revision, waits until that many
new Instances are ready in every member, records the step's `traffic` weight and then waits at its
gate: Immediate (nothing), Timed (`pause.duration` after ready), Manual (`pause: {}`, promote) or
Analysis (`canary_analysis`; a `pause.duration` is a minimum bake).

Phases and transitions:

    (no canary) --a new target revision while another serves--> Pending (step 0)
    Pending   --every member has the step's new Instances ready--> Canarying (weight recorded)
    Pending   --waited past the ready timeout--> Failed
    Canarying --gate open--> Pending (next step) | Promoting (last step, scaleDownDelaySeconds)
    Canarying --gate closed--> Paused (before the last step) | Promoting (last step)
    Paused/Promoting --promote annotation = canary hash (manual, analysis override, pre-step hold)-->
              gate open
    Paused/Promoting --ready Instances drop below the step's count--> Pending (clocks start again)
    Promoting --gate open and scaleDownDelaySeconds passed--> Stable (currentStep = len(steps))
    any but Stable/RolledBack --rollback annotation "true", failed analysis--> RollingBack
    RollingBack --no member has a canary-revision Instance left--> RolledBack
    RolledBack --a change produces a third revision--> Pending (fresh canary; the annotation goes)
    Failed    --rollback--> RollingBack; a newer revision leaves it Failed (documented known bug)
    Stable    --a new target revision--> Pending (the completed revision is the new stable)

While Pending, `stepEnteredTime` holds when the step last entered Pending (the ready timeout counts from
it); from Canarying on it is when the step's new Instances were ready. A rolled-back revision is held:
`rolledBackRevisionHash` keeps every Instance on the stable revision while the spec still asks for it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from ome.config.durations import parse_duration
from ome.omenative import canary_analysis as analysis
from ome.omenative.pods_view import format_time, parse_time

PENDING: Final = "Pending"
CANARYING: Final = "Canarying"
PAUSED: Final = "Paused"
PROMOTING: Final = "Promoting"
STABLE: Final = "Stable"
ROLLING_BACK: Final = "RollingBack"
ROLLED_BACK: Final = "RolledBack"
FAILED: Final = "Failed"

PROMOTE_ANNOTATION: Final = "ome.io/rollout-promote"
ROLLBACK_ANNOTATION: Final = "ome.io/rollout-rollback"
READY_TIMEOUT_ANNOTATION: Final = "ome.io/rollout-ready-timeout"
DEFAULT_READY_TIMEOUT: Final = 15 * 60.0
"""The chart's `rollout.defaultReadyTimeout`; the kustomize manifests leave it unset (no timeout)."""

ROLLBACK_IGNORED: Final = "CanaryRollbackIgnored"
STEP_ADVANCED: Final = "CanaryStepAdvanced"
COMPLETED: Final = "CanaryCompleted"
ROLLED_BACK_EVENT: Final = "CanaryRolledBack"
FAILED_EVENT: Final = "CanaryFailed"

_SAMPLE_KEYS: Final = (
    "analysisFailedChecks",
    "lastEvaluationTime",
    "lastConclusiveEvaluationTime",
    "metricResults",
)
PRIMARY_ORDER: Final = ("router", "engine", "decoder")

Event = tuple[str, str, str]


def primary(components: Sequence[str]) -> str:
    return next((c for c in PRIMARY_ORDER if c in components), components[0] if components else "engine")


def gate(step: Mapping[str, Any]) -> str:
    if step.get("analysis"):
        return "Analysis"
    pause = step.get("pause")
    if pause is None:
        return "Immediate"
    return "Timed" if (pause or {}).get("duration") else "Manual"


def capacity_count(capacity: Any, desired: int) -> int:
    """New-revision Instances of a step: a percentage of desired rounded up, or a count up to desired."""
    if isinstance(capacity, bool):
        return 0
    if isinstance(capacity, int):
        return max(0, min(capacity, desired))
    text = str(capacity).strip()
    if text.endswith("%"):
        try:
            percent = int(text[:-1])
        except ValueError:
            return 0
        return max(0, min(desired, math.ceil(desired * percent / 100)))
    return 0  # admission rejects a quoted count; never stage on it


def ready_timeout(
    annotations: Mapping[str, str], canary: Mapping[str, Any], default: float | None
) -> float | None:
    """The annotation (zero or less ignored) > the group's readyTimeout > rollout.defaultReadyTimeout."""
    value = parse_duration(annotations.get(READY_TIMEOUT_ANNOTATION))
    if value is not None and value > 0:
        return value
    value = parse_duration(canary.get("readyTimeout"))
    if value is not None and value > 0:
        return value
    return default if default and default > 0 else None


@dataclass(frozen=True, slots=True)
class Member:
    """A group member's counts as the Instance rollout reports them."""

    desired: int
    ready_canary: int
    """Ready Instances on the canary revision."""
    on_canary: int
    """Instances on the canary revision, whatever their state."""


@dataclass(frozen=True, slots=True)
class Inputs:
    canary: Mapping[str, Any]
    """The pinned group's `canary` block."""
    members: Mapping[str, Member]
    target_hash: str
    """The revision the spec asks for now."""
    stable_hash: str
    """The revision that served before this canary (the rollback target)."""
    previous: Mapping[str, Any] | None
    phase: str | None
    annotations: Mapping[str, str]
    now: datetime
    ready_timeout: float | None
    sample: analysis.Sample | None = None
    paused: bool = False
    """ome.io/rollout-paused: hold the step; clocks keep running."""


@dataclass(slots=True)
class Plan:
    status: dict[str, Any]
    phase: str
    target_hash: str
    """The revision Instances move toward: the canary, or the stable one on a rollback."""
    new_counts: dict[str, int] = field(default_factory=dict)
    """Per member: Instances to run the canary revision (the rest stay on the stable one)."""
    traffic: list[dict[str, Any]] = field(default_factory=list)
    consume: list[str] = field(default_factory=list)
    """Annotations the controller removes now."""
    events: list[Event] = field(default_factory=list)
    step_advances: int = 0
    completed: bool = False
    rollback_cause: str | None = None
    evaluated: analysis.Verdict | None = None
    wake_after: float | None = None

    def wake(self, seconds: float) -> None:
        seconds = max(seconds, 1.0)
        self.wake_after = seconds if self.wake_after is None else min(self.wake_after, seconds)


def sample_due(inp: Inputs) -> bool:
    """Whether the controller should sample Prometheus before planning this pass."""
    prev = inp.previous or {}
    if inp.phase not in (PAUSED, PROMOTING, CANARYING) or prev.get("preStepHold"):
        return False
    if prev.get("canaryRevisionHash") != inp.target_hash or prev.get("rolledBackRevisionHash"):
        return False
    steps = list(inp.canary.get("steps") or [])
    index = int(prev.get("currentStep") or 0)
    if not 0 <= index < len(steps) or not steps[index].get("analysis"):
        return False
    due = analysis.next_sample_at(steps[index]["analysis"], prev)
    return due is not None and inp.now >= due


def plan(inp: Inputs) -> Plan:
    prev = dict(inp.previous or {})
    steps = list(inp.canary.get("steps") or [])
    target = inp.target_hash
    rejected = prev.get("rolledBackRevisionHash")
    current = prev.get("canaryRevisionHash")

    if rejected and rejected == target:
        return _rolling_back(inp, prev, cause=None)
    if not prev or current != target:
        if inp.phase == FAILED and current and not rejected:
            return _hold(inp, prev, FAILED)  # a new change leaves a failed canary Failed
        if target == inp.stable_hash or not inp.stable_hash:
            return _idle(inp, prev)
        return _start(inp, prev, steps)
    if inp.phase in (STABLE, None) and int(prev.get("currentStep") or 0) >= len(steps):
        return _idle(inp, prev)
    if inp.phase == FAILED:
        if _rollback_requested(inp):
            return _rolling_back(inp, _rejected(prev), cause="manual")
        return _hold(inp, prev, FAILED)
    if _rollback_requested(inp):
        return _rolling_back(inp, _rejected(prev), cause="manual")
    return _step(inp, prev, steps)


# -- the phases ------------------------------------------------------------------------------------


def _idle(inp: Inputs, prev: dict[str, Any]) -> Plan:
    """No canary in flight: everything on the target. A rollback request has nothing to act on."""
    out = Plan(status=prev, phase=STABLE if prev else inp.phase or STABLE, target_hash=inp.target_hash)
    out.new_counts = {c: m.desired for c, m in inp.members.items()}
    if inp.annotations.get(ROLLBACK_ANNOTATION) is not None and not prev.get("rolledBackRevisionHash"):
        out.consume.append(ROLLBACK_ANNOTATION)
        out.events.append(
            (
                "Warning",
                ROLLBACK_IGNORED,
                f"rollback requested for {primary(list(inp.members))} with no canary in flight; the request "
                "is removed",
            )
        )
    return out


def _start(inp: Inputs, prev: dict[str, Any], steps: list[dict[str, Any]]) -> Plan:
    """A fresh canary at step 0 toward the target; a canary already running keeps its stable revision."""
    stable = inp.stable_hash
    if prev.get("canaryRevisionHash") and inp.phase == STABLE:
        stable = prev["canaryRevisionHash"]  # the completed canary is what serves now
    elif prev.get("stableRevisionHash") and inp.phase not in (STABLE, None):
        stable = prev["stableRevisionHash"]  # a newer revision mid-canary, or after a rollback
    status: dict[str, Any] = {
        "canaryRevisionHash": inp.target_hash,
        "stableRevisionHash": stable,
        "currentStep": 0,
        "observedTrafficWeight": 0,
        "stepEnteredTime": format_time(inp.now),
    }
    fresh = Inputs(**{**_fields(inp), "stable_hash": str(stable), "previous": status, "phase": PENDING})
    out = _step(fresh, dict(status), steps)
    if inp.annotations.get(ROLLBACK_ANNOTATION) is not None:
        out.consume.append(ROLLBACK_ANNOTATION)  # a lingering, spent request must not roll this one back
    return out


def _fields(inp: Inputs) -> dict[str, Any]:
    return {name: getattr(inp, name) for name in Inputs.__slots__}


def _rejected(prev: dict[str, Any]) -> dict[str, Any]:
    return {**prev, "rolledBackRevisionHash": prev.get("canaryRevisionHash"), "observedTrafficWeight": 0}


def _rolling_back(inp: Inputs, prev: dict[str, Any], cause: str | None) -> Plan:
    """Every Instance back to the stable revision; the rejected revision stays held."""
    status = {**prev, "observedTrafficWeight": 0, "preStepHold": None}
    status = {k: v for k, v in status.items() if v is not None}
    left = sum(m.on_canary for m in inp.members.values())
    phase = ROLLING_BACK if left else ROLLED_BACK
    stable = str(status.get("stableRevisionHash") or inp.stable_hash)
    out = Plan(status=status, phase=phase, target_hash=stable)
    out.new_counts = {c: 0 for c in inp.members}
    out.traffic = _traffic(inp, status, 0)
    if cause is not None:
        out.rollback_cause = cause
        out.events.append(
            (
                "Warning",
                ROLLED_BACK_EVENT,
                f"canary revision {prev.get('canaryRevisionHash')} rolled back to "
                f"{status.get('stableRevisionHash')} ({cause})",
            )
        )
    if PROMOTE_ANNOTATION in inp.annotations:
        out.consume.append(PROMOTE_ANNOTATION)
    return out


def _hold(inp: Inputs, prev: dict[str, Any], phase: str) -> Plan:
    """Keep the step's Instances and recorded weight as they are (Failed)."""
    steps = list(inp.canary.get("steps") or [])
    index = min(int(prev.get("currentStep") or 0), max(len(steps) - 1, 0))
    out = Plan(status=prev, phase=phase, target_hash=str(prev.get("canaryRevisionHash") or inp.target_hash))
    out.new_counts = {c: _count(steps, index, m) for c, m in inp.members.items()}
    out.traffic = _traffic(inp, prev, int(prev.get("observedTrafficWeight") or 0))
    return out


def _count(steps: Sequence[Mapping[str, Any]], index: int, member: Member) -> int:
    if not steps:
        return member.desired
    return capacity_count(steps[min(index, len(steps) - 1)].get("capacity"), member.desired)


def _step(inp: Inputs, status: dict[str, Any], steps: list[dict[str, Any]]) -> Plan:
    """Run the current step; an open gate moves to the next step within the same pass."""
    out = Plan(status=status, phase=inp.phase or PENDING, target_hash=inp.target_hash)
    phase = inp.phase or PENDING
    for _ in range(len(steps) + 1):
        index = int(status.get("currentStep") or 0)
        if index >= len(steps):
            return _complete(inp, status, out)
        step = steps[index]
        out.new_counts = {c: capacity_count(step.get("capacity"), m.desired) for c, m in inp.members.items()}
        ready = all(m.ready_canary >= out.new_counts[c] for c, m in inp.members.items())
        if not ready:
            if phase not in (PENDING,):
                status["stepEnteredTime"] = format_time(inp.now)  # lost Instances: clocks start again
                _reset_samples(status)
            out.phase = PENDING
            since = parse_time(status.get("stepEnteredTime")) or inp.now
            if inp.ready_timeout is not None:
                left = (since + timedelta(seconds=inp.ready_timeout) - inp.now).total_seconds()
                if left <= 0:
                    out.phase = FAILED
                    out.events.append(
                        (
                            "Warning",
                            FAILED_EVENT,
                            f"canary step {index} waited longer than the ready timeout "
                            f"({_go(inp.ready_timeout)}) for its new Instances",
                        )
                    )
                else:
                    out.wake(left)
            out.traffic = _traffic(inp, status, int(status.get("observedTrafficWeight") or 0))
            return out
        if phase == PENDING:
            status["stepEnteredTime"] = format_time(inp.now)
            _reset_samples(status)
            phase = CANARYING
        last = index == len(steps) - 1
        if status.get("preStepHold"):
            if not _promoted(inp, status, out):
                out.phase = PAUSED if not last else PROMOTING
                out.traffic = _traffic(inp, status, int(status.get("observedTrafficWeight") or 0))
                return out
            status.pop("preStepHold", None)
            out.consume.append(PROMOTE_ANNOTATION)
            status["stepEnteredTime"] = format_time(inp.now)
        status["observedTrafficWeight"] = int(step.get("traffic") or 0)
        out.traffic = _traffic(inp, status, status["observedTrafficWeight"])
        opened = _gate_open(inp, status, step, out)
        if out.phase in (FAILED, ROLLING_BACK, ROLLED_BACK):
            return out
        if opened and last:
            delay = float(inp.canary.get("scaleDownDelaySeconds") or 0)
            entered = parse_time(status.get("stepEnteredTime")) or inp.now
            left = (entered + timedelta(seconds=delay) - inp.now).total_seconds()
            if left > 0:
                out.phase = PROMOTING
                out.wake(left)
                return out
        if not opened:
            out.phase = PROMOTING if last else PAUSED
            if inp.paused and gate(step) == "Immediate":
                out.phase = CANARYING
            return out
        status["currentStep"] = index + 1
        status["stepEnteredTime"] = format_time(inp.now)
        _reset_samples(status)
        out.step_advances += 1
        if index + 1 < len(steps):
            message = f"canary advanced to step {index + 1} of {len(steps)}"
            out.events.append(("Normal", STEP_ADVANCED, message))
        phase = PENDING
    return out


def _complete(inp: Inputs, status: dict[str, Any], out: Plan) -> Plan:
    out.phase = STABLE
    out.new_counts = {c: m.desired for c, m in inp.members.items()}
    out.traffic = _traffic(inp, {**status, "stableRevisionHash": status.get("canaryRevisionHash")}, 0)
    if inp.phase != STABLE:
        out.completed = True
        out.events.append(
            ("Normal", COMPLETED, f"canary revision {status.get('canaryRevisionHash')} promoted to stable")
        )
    return out


def _gate_open(inp: Inputs, status: dict[str, Any], step: Mapping[str, Any], out: Plan) -> bool:
    """Whether the step's gate lets it advance now; an analysis verdict may fail or roll back instead."""
    kind = gate(step)
    entered = parse_time(status.get("stepEnteredTime")) or inp.now
    bake = parse_duration((step.get("pause") or {}).get("duration")) or 0.0
    bake_left = (entered + timedelta(seconds=bake) - inp.now).total_seconds()
    if inp.paused:
        return False  # held where it is; its clocks keep running
    if kind == "Immediate":
        return True
    if kind == "Timed":
        if bake_left <= 0:
            return True
        out.wake(bake_left)
        return False
    if kind == "Manual":
        if _promoted(inp, status, out):
            out.consume.append(PROMOTE_ANNOTATION)
            return True
        return False
    spec = step["analysis"]
    if _promoted(inp, status, out):  # promote --override-analysis: passes warm-up, sampling and bake
        out.consume.append(PROMOTE_ANNOTATION)
        return True
    decision = analysis.decide(spec, status, inp.sample, inp.now, inp.ready_timeout, bake_left <= 0)
    status.update(decision.status)
    out.evaluated = decision.evaluated
    if decision.action == "rollback":
        rolled = _rolling_back(inp, _rejected(status), cause="analysis")
        out.status, out.phase, out.target_hash = rolled.status, rolled.phase, rolled.target_hash
        out.new_counts, out.traffic = rolled.new_counts, rolled.traffic
        out.events.extend(rolled.events)
        out.rollback_cause = "analysis"
        out.consume.extend(rolled.consume)
        return False
    if decision.action == "fail":
        out.phase = FAILED
        out.events.append(
            ("Warning", FAILED_EVENT, "canary analysis stayed inconclusive longer than the ready timeout")
        )
        return False
    if decision.action == "advance":
        return True
    due = analysis.next_sample_at(spec, status)
    if due is not None:
        out.wake((due - inp.now).total_seconds())
    if inp.ready_timeout:
        since = parse_time(status.get("lastConclusiveEvaluationTime")) or entered
        out.wake((since + timedelta(seconds=inp.ready_timeout) - inp.now).total_seconds())
    return False


def _promoted(inp: Inputs, status: Mapping[str, Any], out: Plan) -> bool:
    """A promote naming this canary's revision, not yet spent this pass (one promote, one gate)."""
    value = inp.annotations.get(PROMOTE_ANNOTATION)
    spent = PROMOTE_ANNOTATION in out.consume
    return not spent and value is not None and value in (status.get("canaryRevisionHash"), "full")


def _rollback_requested(inp: Inputs) -> bool:
    return inp.annotations.get(ROLLBACK_ANNOTATION) == "true"


def _reset_samples(status: dict[str, Any]) -> None:
    for key in _SAMPLE_KEYS:
        status.pop(key, None)


def _traffic(inp: Inputs, status: Mapping[str, Any], weight: int) -> list[dict[str, Any]]:
    """`status.components.<primary>.traffic`: the new revision tagged canary, the previous stable; a
    revision with weight 0 is left out."""
    return traffic_entries(
        str(status.get("canaryRevisionHash") or ""), str(status.get("stableRevisionHash") or ""), weight
    )


def traffic_entries(canary_hash: str, stable_hash: str, weight: int) -> list[dict[str, Any]]:
    """Entries without the Service prefix: the caller names them `<isvc>-<component>-rev-<hash>`."""
    out: list[dict[str, Any]] = []
    if weight > 0 and canary_hash:
        out.append({"revisionHash": canary_hash, "percent": weight, "tag": "canary", "latestRevision": True})
    if weight < 100 and stable_hash:
        out.append({"revisionHash": stable_hash, "percent": 100 - weight, "tag": "stable"})
    return out


def _go(seconds: float) -> str:
    total = int(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"
