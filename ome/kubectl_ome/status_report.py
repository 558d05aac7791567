"""`kubectl ome status`: one report of why an InferenceService is or is not ready (pure).

A FIELD/VALUE table: the Ready condition and the others, each component's mode, URL and lifecycle,
its Instances (the ones not Ready in detail), the runtime, and recent Warning events of the service,
its InferenceReplicas and its pods.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ome.kubectl_ome.effective import ComponentMode, RuntimeRead
from ome.kubectl_ome.instances import ComponentReport, aof
from ome.kubectl_ome.table import format_table, shorten_end

Obj = dict[str, Any]

VALUE_WIDTH: Final = 100
MAX_INSTANCE_ROWS: Final = 10
"""Instances shown in detail per component; the ones not Ready first."""


@dataclass(frozen=True, slots=True)
class StatusInputs:
    isvc: Mapping[str, Any]
    modes: Sequence[ComponentMode]
    runtime: RuntimeRead
    replicas: Sequence[ComponentReport]
    replica_objects: Mapping[str, Mapping[str, Any]]
    """InferenceReplica name -> object."""
    events: Sequence[Mapping[str, Any]]
    issues: Sequence[str] = field(default_factory=tuple)


def ready_value(
    conditions: Sequence[Mapping[str, Any]], type_: str = "Ready"
) -> tuple[str, Mapping[str, Any]]:
    """`<status> / <validity>` of a condition, and the condition (empty when there is none)."""
    found = [c for c in conditions if c.get("type") == type_]
    if not found:
        return "NotRecorded / Unavailable", {}
    statuses = {c.get("status") for c in found}
    if len(found) > 1 or not statuses <= {"True", "False", "Unknown"}:
        status = found[0].get("status") if len(statuses) == 1 else "NotRecorded"
        return f"{status} / Invalid", {}
    return f"{found[0].get('status')} / Valid", found[0]


def condition_value(cond: Mapping[str, Any]) -> str:
    text = f"{cond.get('status', '?')} {cond.get('reason') or '-'}"
    if cond.get("message"):
        text += f": {cond['message']}"
    return text


def lifecycle_value(lifecycle: Mapping[str, Any]) -> str:
    """Instance counts and revisions, from status.components.<c>.lifecycle or the replica's status."""
    parts = [
        f"ready={lifecycle.get('readyReplicas', 0)}/{lifecycle.get('replicas', 0)}",
        f"serving={lifecycle.get('servingReplicas', 0)}",
        f"available={lifecycle.get('availableReplicas', 0)}",
        f"updated={lifecycle.get('updatedReplicas', 0)}",
    ]
    current, update = lifecycle.get("currentRevision"), lifecycle.get("updateRevision")
    if current or update:
        parts.append(f"revision={current}" + (f">{update}" if update and update != current else ""))
    hold = lifecycle.get("rolloutHold") or {}
    if hold:
        parts.append(f"hold={hold.get('gate')}: {hold.get('reason')}")
    return " ".join(parts)


def instance_value(row: Mapping[str, Any]) -> str:
    counts = "/".join(str(row.get(k, 0)) for k in ("servingPodCount", "availablePodCount", "podCount"))
    parts = [
        str(row.get("phase") or "-"),
        f"inc={row.get('incarnation', 0)}",
        f"pods={counts}",
        f"flags={aof(row)}",
    ]
    running, target = row.get("runningRevision"), row.get("targetRevision")
    if running or target:
        parts.append(f"revision={running or '-'}" + (f">{target}" if target and target != running else ""))
    operation = row.get("operation") or {}
    if operation:
        parts.append(f"op={operation.get('type')}/{operation.get('step')}")
        if operation.get("waiting"):
            parts.append(f"waiting={operation['waiting']}")
    failure = row.get("lastFailure") or {}
    if failure:
        reason, code = failure.get("reason") or "-", failure.get("exitCode", "-")
        parts.append(f"failure={failure.get('podName')} {reason} exit={code}")
    bad = [c for c in row.get("conditions") or [] if c.get("status") == "False"]
    for cond in bad:
        parts.append(f"{cond.get('type')}=False({cond.get('reason') or '-'})")
    return " ".join(parts)


def instances_summary(report: ComponentReport) -> str:
    phases = Counter(str(r.get("phase") or "-") for r in report.rows)
    counts = " ".join(f"{phase}={n}" for phase, n in sorted(phases.items()))
    return f"{report.replica} evidence={report.evidence} encoding={report.encoding} {counts}".rstrip()


def event_value(event: Mapping[str, Any]) -> str:
    count = event.get("count") or (event.get("series") or {}).get("count") or 1
    return f"{event.get('reason') or '-'} x{count}: {event.get('message') or ''}".rstrip(": ")


def status_rows(inp: StatusInputs) -> list[tuple[str, str]]:
    meta, status = inp.isvc.get("metadata") or {}, inp.isvc.get("status") or {}
    conditions = status.get("conditions") or []
    ready, ready_cond = ready_value(conditions)
    rows: list[tuple[str, str]] = [
        ("Name", str(meta.get("name"))),
        ("Namespace", str(meta.get("namespace"))),
        ("Ready", ready),
    ]
    if ready_cond:
        rows.append(("Ready reason", str(ready_cond.get("reason") or "-")))
        if ready_cond.get("message"):
            rows.append(("Ready message", str(ready_cond["message"])))
    rows.append(("Generation", f"{meta.get('generation')} observed={status.get('observedGeneration', '-')}"))
    rows.append(("URL", str(status.get("url") or "-")))
    for cond in conditions:
        if cond.get("type") != "Ready":
            rows.append((f"Condition {cond.get('type')}", condition_value(cond)))
    rows.append(("Runtime", _runtime_value(inp.runtime)))
    components = status.get("components") or {}
    shown = [*inp.modes]
    for report in inp.replicas:  # components fronted by spec.replicaRefs need not be declared
        if report.component not in {m.component for m in shown}:
            shown.append(ComponentMode(report.component, "InferenceReplica", "ReplicaRefs"))
    for mode in shown:
        rows.extend(_component_rows(inp, mode, conditions, components.get(mode.component) or {}))
    for event in inp.events:
        involved = event.get("involvedObject") or {}
        rows.append((f"Warning {involved.get('kind')}/{involved.get('name')}", event_value(event)))
    rows.extend(("Issue", issue) for issue in inp.issues)
    return rows


def _runtime_value(runtime: RuntimeRead) -> str:
    if runtime.available:
        return f"{runtime.ref} ({runtime.selection})"
    return f"Unavailable {runtime.reason}" + (f" {runtime.ref}" if runtime.ref else "")


def _component_rows(
    inp: StatusInputs, mode: ComponentMode, conditions: Sequence[Mapping[str, Any]], entry: Mapping[str, Any]
) -> list[tuple[str, str]]:
    name = mode.component
    ready, cond = ready_value(conditions, f"{name.capitalize()}Ready")
    value = f"{ready}; {mode}"
    if cond.get("reason"):
        value += f" reason={cond['reason']}"
    rows = [(name, value), (f"{name} url", str(entry.get("url") or "-"))]
    reports = [r for r in inp.replicas if r.component == name]
    lifecycle = entry.get("lifecycle")
    if not lifecycle and reports:
        lifecycle = (inp.replica_objects.get(reports[0].replica) or {}).get("status")
    if lifecycle:
        rows.append((f"{name} lifecycle", lifecycle_value(lifecycle)))
    for report in reports:
        rows.append((f"{name} instances", instances_summary(report)))
        replica_status = (inp.replica_objects.get(report.replica) or {}).get("status") or {}
        for cond in replica_status.get("conditions") or []:
            if _notable(cond):
                rows.append((f"{name} {cond.get('type')}", condition_value(cond)))
        ordered = sorted(report.rows, key=lambda r: r.get("phase") == "Ready")
        for row in ordered[:MAX_INSTANCE_ROWS]:
            rows.append((f"{name}[{row.get('index')}]", instance_value(row)))
        if len(ordered) > MAX_INSTANCE_ROWS:
            rows.append((f"{name} more", f"{len(ordered) - MAX_INSTANCE_ROWS} more Instances"))
    return rows


def _notable(cond: Mapping[str, Any]) -> bool:
    """A replica condition worth a row: Ready when not True, a problem flag when True."""
    if cond.get("type") == "Ready":
        return cond.get("status") != "True"
    return cond.get("status") == "True"


def format_status(rows: Sequence[tuple[str, str]]) -> str:
    return format_table(("FIELD", "VALUE"), [(f, shorten_end(v, VALUE_WIDTH)) for f, v in rows])


def status_document(inp: StatusInputs) -> Obj:
    meta = inp.isvc.get("metadata") or {}
    return {
        "apiVersion": "cli.ome.io/v1alpha1",
        "kind": "StatusReport",
        "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")},
        "content": {
            "status": inp.isvc.get("status") or {},
            "runtime": {"ref": inp.runtime.ref, "reason": inp.runtime.reason},
            "components": [
                {
                    "component": m.component,
                    "mode": m.mode,
                    "source": m.source,
                    "replicas": [
                        {"name": r.replica, "evidence": r.evidence, "issues": r.issues, "instances": r.rows}
                        for r in inp.replicas
                        if r.component == m.component
                    ],
                }
                for m in inp.modes
            ],
            "events": list(inp.events),
            "issues": list(inp.issues),
        },
    }
