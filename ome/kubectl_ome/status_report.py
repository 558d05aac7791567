"""`kubectl ome status`: why an InferenceService is or isn't ready, in the documented layout (pure).

Sections in order: the service (Ready, reason, model, runtime, generation), pods and components
(observation rows, one `<component>` row each), Rollout, Autoscaling, Placement, Traffic, Runtime
active and Accelerator, Warning events and issues, then the detail hints. Ready reasons and messages
and event reasons are masked: a value with `://` is [OMITTED], a credential [REDACTED].
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from ome.kubectl_ome import traffic_report
from ome.kubectl_ome.effective import RuntimeRead
from ome.kubectl_ome.output import document, field_table, mask, rfc3339
from ome.kubectl_ome.rollout_report import summarize
from ome.resolution.modes import COMPONENTS

Obj = dict[str, Any]

VALUE_WIDTH: Final = 56
MAX_EVENT_PODS: Final = 15
MAX_EVENTS_PER_OBJECT: Final = 25
MAX_EVENTS: Final = 100
FIELD_NAME_WIDTH: Final = 20
DETAILS: Final = (
    ("Rollout detail", "kubectl ome rollout status NAME"),
    ("Autoscale detail", "kubectl ome autoscale status NAME"),
    ("Placement detail", "kubectl ome placement status NAME"),
    ("Traffic detail", "kubectl ome traffic status NAME"),
    ("Runtime detail", "kubectl ome runtime effective NAME"),
    ("Accelerator detail", "kubectl ome accelerator explain NAME"),
)
_COND_STATUSES: Final = ("True", "False", "Unknown")


@dataclass(frozen=True, slots=True)
class Observation:
    """How a bounded read went: `<state> count=<n> truncated=<bool>[ <reason>]`."""

    state: str = "Reported"
    count: int = 0
    truncated: bool = False
    reason: str | None = None

    def __str__(self) -> str:
        text = f"{self.state} count={self.count} truncated={str(self.truncated).lower()}"
        return f"{text} {self.reason}" if self.reason else text


@dataclass(frozen=True, slots=True)
class StatusInputs:
    isvc: Mapping[str, Any]
    runtime: RuntimeRead
    pods: Sequence[Mapping[str, Any]]
    pod_observation: Observation
    events: Sequence[Mapping[str, Any]]
    event_observation: Observation
    collected_at: datetime
    event_targets_skipped: int = 0
    issues: Sequence[str] = field(default_factory=tuple)


@dataclass(slots=True)
class ConditionCheck:
    status: str
    validity: str
    condition: Mapping[str, Any]
    inspected: int
    total: int
    warnings: list[str]

    @property
    def value(self) -> str:
        return f"{self.status} / {self.validity}"

    @property
    def inspection(self) -> str:
        state = "Complete" if not self.warnings else "Partial"
        return f"{state} {self.inspected}/{self.total}"


def check_condition(
    conditions: Sequence[Mapping[str, Any]], type_: str, now: datetime | None = None
) -> ConditionCheck:
    """A condition's `<status> / <validity>` and what the inspection of all conditions found."""
    warnings: list[str] = []
    found = []
    for cond in conditions:
        if not isinstance(cond, Mapping) or not cond.get("type") or cond.get("status") not in _COND_STATUSES:
            warnings.append("InvalidConditionRecord")
            continue
        stamp = str(cond.get("lastTransitionTime") or "")
        if now is not None and stamp and stamp > rfc3339(now):
            warnings.append("FutureConditionTimestamp")
        if cond.get("type") == type_:
            found.append(cond)
    chosen: Mapping[str, Any] = {}
    status, validity = "NotRecorded", "Unavailable"
    if found:
        if len({c.get("status") for c in found}) > 1 or len({c.get("severity") for c in found}) > 1:
            warnings.append("ConflictingReadyConditions")
            status, validity = "NotRecorded", "Invalid"
        elif len(found) > 1:
            warnings.append("DuplicateReadyConditions")
            status, validity = str(found[0].get("status")), "Invalid"
        else:
            chosen = found[0]
            status, validity = str(chosen.get("status")), "Valid"
    elif "InvalidConditionRecord" in warnings:
        validity = "Invalid"
    return ConditionCheck(
        status, validity, chosen, len(conditions), len(conditions), list(dict.fromkeys(warnings))
    )


@dataclass(slots=True)
class PodCounts:
    total: int = 0
    ready: int = 0
    restarts: int = 0
    phases: dict[str, int] = field(default_factory=lambda: {"R": 0, "P": 0, "F": 0, "S": 0, "U": 0})
    deleting: int = 0


_PHASE_KEY: Final = {"Running": "R", "Pending": "P", "Failed": "F", "Succeeded": "S"}


def count_pods(pods: Sequence[Mapping[str, Any]]) -> tuple[dict[str, PodCounts], list[str]]:
    """Counted pods per component, and the issues for pods left out."""
    counts: dict[str, PodCounts] = {}
    issues: list[str] = []
    for pod in pods:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        component = labels.get("component")
        if component not in COMPONENTS:
            issues.append("UnsupportedComponent")
            continue
        c = counts.setdefault(str(component), PodCounts())
        status = pod.get("status") or {}
        c.total += 1
        conditions = status.get("conditions") or []
        c.ready += any(x.get("type") == "Ready" and x.get("status") == "True" for x in conditions)
        for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
            c.restarts += sum(int(s.get("restartCount") or 0) for s in status.get(key) or [])
        c.phases[_PHASE_KEY.get(str(status.get("phase")), "U")] += 1
        c.deleting += bool((pod.get("metadata") or {}).get("deletionTimestamp"))
    return counts, list(dict.fromkeys(issues))


def _autoscaling(isvc: Mapping[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    components = (isvc.get("status") or {}).get("components") or {}
    known = {k: v for k, v in components.items() if k in COMPONENTS}
    if not known:
        return "Unavailable / Unavailable parent status", []
    rows = []
    states = []
    for comp in COMPONENTS:
        entry = known.get(comp)
        if entry is None:
            continue
        scaler = entry.get("autoscaler") or {}
        if not scaler:
            states.append("NotReported")
            continue
        current, desired = scaler.get("currentReplicas"), scaler.get("desiredReplicas")
        evidence = "Reported" if current and desired else "Ambiguous"
        counts = f"{current or 0}->{desired or 0}"
        target = "Reported" if entry.get("scaleTargetRef") else "NotReported"
        state = "Reported" if target == "Reported" and evidence == "Reported" else "Partial"
        states.append(state)
        rows.append(
            (
                f"Scale {comp}",
                f"{state} {scaler.get('class', 'Unknown')}/{scaler.get('managedBy', 'Unknown')} "
                f"{counts} ({evidence})",
            )
        )
    if not rows:
        return "Unavailable; parent read, no usable scaler status", []
    state = (
        "Reported" if all(s == "Reported" for s in states) and len(known) == len(components) else "Partial"
    )
    return f"{state} / Reported parent status", rows


def _traffic(isvc: Mapping[str, Any], wide: bool) -> list[tuple[str, str]]:
    """The Traffic row, the state `traffic status` computes, and its wide detail rows."""
    report = traffic_report.build_status(isvc, datetime.now(UTC))
    if report.state == "Unavailable":
        return [("Traffic", "Unavailable / Unavailable parent status")]
    rows = [("Traffic", f"{report.state} / Reported parent status")]
    if wide:
        ready = report.ready_status or "Unknown"
        rows += [
            ("Traffic policy Ready", f"{ready} / {report.fresh}"),
            ("Traffic translator", report.translator),
            ("Traffic algorithm", report.algorithm),
        ]
    return rows


def _placement(isvc: Mapping[str, Any]) -> tuple[str, str, str]:
    """Placement, Placement evidence, Placement mode."""
    spec, status = isvc.get("spec") or {}, isvc.get("status") or {}
    if not spec.get("placement"):
        return "NotConfigured / NotApplicable / NotRecorded", "Unavailable / NotApplicable", "NotApplicable"
    mode = str((spec.get("placement") or {}).get("mode") or "Single")
    placement = status.get("placement") or {}
    if not placement:
        return f"NotReported / {mode} / NotRecorded", "Unavailable / NotApplicable", "Declared"
    return f"Reported / {mode} / {placement.get('phase') or 'Unknown'}", "Reported / Unverifiable", "Declared"


def _runtime_active(isvc: Mapping[str, Any], runtime: RuntimeRead) -> str:
    spec = isvc.get("spec") or {}
    annotations = (isvc.get("metadata") or {}).get("annotations") or {}
    if annotations.get("ome.io/deploymentMode") == "VirtualDeployment":
        return "Unavailable / Unavailable VirtualDeployment"
    if runtime.reason == "NotConfigured":
        return "NotConfigured / Unavailable"
    if runtime.reason == "AutoSelectionNotProbed" or (
        not (spec.get("runtime") or {}).get("name") and runtime.obj is None
    ):
        return "Unavailable / Unavailable AutoSelectionNotProbed"
    if runtime.available:
        return "Reported / Available"
    return f"Partial / Unavailable {runtime.reason or 'ReadFailed'}"


def _accelerator(isvc: Mapping[str, Any], runtime: RuntimeRead) -> list[tuple[str, str]]:
    spec = isvc.get("spec") or {}
    if not (spec.get("runtime") or {}).get("name") and runtime.obj is None:
        return [("Accelerator", "Unavailable / Unavailable AutoSelectionNotProbed")]
    service = spec.get("acceleratorSelector") or {}
    rows = []
    for comp in ("engine", "decoder"):
        body = spec.get(comp)
        if body is None:
            continue
        selector = (body or {}).get("acceleratorOverride") or service
        if selector.get("acceleratorClass") or selector.get("policy"):
            selected = (
                ((isvc.get("status") or {}).get("components") or {}).get(comp, {}).get("selectedAccelerator")
            )
            value = f"Reported ({selected['acceleratorClass']})" if selected else "NotReported (NotRequested)"
            rows.append((f"Accelerator {comp}", value))
    if not rows:
        return [("Accelerator", "NotConfigured / Unavailable")]
    state = "Reported" if all(v.startswith("Reported") for _, v in rows) else "Partial"
    return [("Accelerator", f"{state} / Computed"), *rows]


def _event_name(event: Mapping[str, Any]) -> str:
    kind = str((event.get("involvedObject") or {}).get("kind") or "")
    return f"Warning {kind}" if len(kind) <= 12 else f"Warning {kind[:9]}..."


def status_rows(inp: StatusInputs, wide: bool = False) -> list[tuple[str, str]]:
    meta, spec, status = (
        inp.isvc.get("metadata") or {},
        inp.isvc.get("spec") or {},
        inp.isvc.get("status") or {},
    )
    conditions = status.get("conditions") or []
    ready = check_condition(conditions, "Ready", inp.collected_at)
    rows: list[tuple[str, str]] = [
        ("Name", str(meta.get("name"))),
        ("Namespace", str(meta.get("namespace"))),
        ("Ready", ready.value),
    ]
    valid = ready.validity == "Valid"
    rows.append(("Ready reason", mask(str(ready.condition.get("reason") or "")) if valid else ""))
    if wide:
        rows.append(("Ready message", mask(str(ready.condition.get("message") or "")) if valid else ""))
        rows.append(("Condition inspection", ready.inspection))
        rows += [("Condition warning", w) for w in ready.warnings]
    rows.append(("Declared runtime", str((spec.get("runtime") or {}).get("name") or "")))
    rows.append(("Model", str((spec.get("model") or {}).get("name") or "")))
    rows.append(
        (
            "Generation",
            f"{meta.get('generation')} observed={status.get('observedGeneration', 0)}; advisory Unverifiable",
        )
    )
    rows.append(("Pod observation", str(inp.pod_observation)))
    rows.append(("Event observation", str(inp.event_observation)))
    if wide:
        rows += [("Pod targets skipped", "0"), ("Event targets skip", str(inp.event_targets_skipped))]
    counts, pod_issues = count_pods(inp.pods)
    pods_read = inp.pod_observation.state != "Unavailable"
    for comp in COMPONENTS:
        if spec.get(comp) is None and comp not in counts:
            continue
        c = counts.get(comp, PodCounts())
        cond = check_condition(conditions, f"{comp.capitalize()}Ready")
        rows.append((comp, f"{cond.value}; Ready pods={c.ready}/{c.total} restarts={c.restarts}"))
        if wide:
            phases = " ".join(f"{k}={v}" for k, v in c.phases.items())
            rows += [
                (f"{comp} Pod total", str(c.total)),
                (f"{comp} Pod Ready", str(c.ready)),
                (f"{comp} restarts", str(c.restarts)),
                (f"{comp} phases", f"{phases} deleting={c.deleting}"),
                (f"{comp} evidence", "Observed" if pods_read else "Unavailable"),
            ]
    summary = summarize(inp.isvc)
    rows += [
        ("Rollout", f"{summary.state} reported={summary.reported}"),
        ("Rollout evidence", f"{summary.evidence} / {summary.epoch}"),
    ]
    rollout_issues = [*[i for c in summary.components for i in c.issues], *summary.issues]
    if wide:
        rows.append(("Coordination Ready", summary.coordination))
        rows += [("Rollout issue", i) for i in dict.fromkeys(rollout_issues)]
        if rollout_issues:
            rows.append(("Rollout warning", "PartialData"))
    autoscaling, scale_rows = _autoscaling(inp.isvc)
    rows.append(("Autoscaling", autoscaling))
    rows += scale_rows
    placement, placement_evidence, placement_mode = _placement(inp.isvc)
    rows.append(("Placement", placement))
    if wide:
        rows += [("Placement evidence", placement_evidence), ("Placement mode", placement_mode)]
    rows += _traffic(inp.isvc, wide)
    rows.append(("Runtime active", _runtime_active(inp.isvc, inp.runtime)))
    if wide and inp.runtime.available and inp.runtime.ref:
        kind = "ServingRuntime" if inp.runtime.ref.startswith("SR/") else "ClusterServingRuntime"
        pinned = status.get("pinnedRevisionName")
        rows += [
            ("Active runtime name", inp.runtime.ref.rsplit("/", 1)[-1]),
            ("Active runtime kind", kind),
            ("Active origin", "ControllerRevision" if pinned else "LiveRuntime"),
        ]
    rows += _accelerator(inp.isvc, inp.runtime)
    for event in inp.events:
        involved = event.get("involvedObject") or {}
        rows.append((_event_name(event), f"{involved.get('name')} {mask(str(event.get('reason') or ''))}"))
        if wide:
            count = event.get("count") or (event.get("series") or {}).get("count") or 1
            rows += [("Event message", mask(str(event.get("message") or ""))), ("Event count", str(count))]
            last = event.get("lastTimestamp") or (event.get("series") or {}).get("lastObservedTime")
            if last:
                rows.append(("Event last seen", str(last)))
    rows += [("Issue", i) for i in dict.fromkeys([*pod_issues, *inp.issues])]
    rows.append(("Full safe values", "Use -o json or -o yaml"))
    rows += list(DETAILS)
    if wide:
        rows += [
            ("Collected at", rfc3339(inp.collected_at)),
            ("Source generation", str(meta.get("generation"))),
            ("Source evidence", "Observed"),
        ]
    return rows


def format_status(rows: Sequence[tuple[str, str]]) -> str:
    return field_table(rows, VALUE_WIDTH)


def status_document(inp: StatusInputs) -> Obj:
    """The StatusReport: every section under `content`, values masked, empty reason/message left out."""
    meta = inp.isvc.get("metadata") or {}
    status = inp.isvc.get("status") or {}
    ready = check_condition(status.get("conditions") or [], "Ready", inp.collected_at)
    ready_doc: Obj = {"status": ready.status, "validity": ready.validity}
    if ready.validity == "Valid" and ready.condition.get("reason"):
        ready_doc["reason"] = mask(str(ready.condition["reason"]))
    if ready.validity == "Valid" and ready.condition.get("message"):
        ready_doc["message"] = mask(str(ready.condition["message"]))
    ready_doc["inspection"] = {
        "state": "Complete" if not ready.warnings else "Partial",
        "total": ready.total,
        "inspected": ready.inspected,
        "warnings": ready.warnings,
    }
    rows = status_rows(inp, wide=True)
    content = {
        "ready": ready_doc,
        "rows": [{"field": f, "value": v} for f, v in rows],
        "pods": {"observation": str(inp.pod_observation)},
        "events": [
            {
                "object": "/".join(
                    str((e.get("involvedObject") or {}).get(k)) for k in ("kind", "name")
                ),
                "reason": mask(str(e.get("reason") or "")),
                "message": mask(str(e.get("message") or "")),
            }
            for e in inp.events
        ],
        "issues": list(inp.issues),
    }
    return document(
        "StatusReport",
        content,
        metadata={"name": meta.get("name"), "namespace": meta.get("namespace")},
        collectedAt=rfc3339(inp.collected_at),
    )
