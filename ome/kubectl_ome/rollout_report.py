"""`kubectl ome rollout status` and `explain` reports (pure), from an InferenceService object.

The values come from `spec.rollout` (Declared) and the controller's status (Reported):
`status.components.<c>` (rolloutPhase, canary, traffic, revisions), `status.rollout` (the active run
with its pinned plan, the last run, the per-group resolution) and the RolloutPlanReady,
RolloutPlanDrift and RolloutCoordinationReady conditions. The CLI can never tie that status to the
current generation, so STATE is `Unknown` with the issue `EpochUnverifiable` whenever the status
decides; REPORTED carries the state the status adds up to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ome.kubectl_ome.output import dash
from ome.kubectl_ome.table import format_table
from ome.omenative import canary_run
from ome.omenative.canary_plan import gate
from ome.resolution.modes import COMPONENTS

Obj = dict[str, Any]

# REPORTED: the first of these that applies to any group or component wins.
REPORTED_ORDER: Final = (
    "Failed",
    "RollingBack",
    "RolledBack",
    "Paused",
    "Unknown",
    "InProgress",
    "Staged",
    "Succeeded",
)
_PHASE_STATE: Final = {
    "Failed": "Failed",
    "RollingBack": "RollingBack",
    "RolledBack": "RolledBack",
    "Paused": "Paused",
    "Canarying": "InProgress",
    "Pending": "InProgress",
    "Promoting": "InProgress",
    "BlueGreenStandby": "InProgress",
    "Stable": "Succeeded",
}
STATUS_FIELDS: Final = (
    "STATE",
    "REPORTED",
    "EVIDENCE",
    "EPOCH",
    "COORDINATION",
)
COMPONENT_FIELDS: Final = (
    "GROUP",
    "STRATEGY",
    "GROUP-PHASE",
    "PHASE",
    "GROUP-CURRENT",
    "GROUP-PREVIOUS",
    "STEP",
    "GATE",
    "CAPACITY",
    "TRAFFIC",
    "ROLLED-OUT",
    "READY",
    "PREVIOUS",
)


def declared_components(isvc: Mapping[str, Any]) -> list[str]:
    spec = isvc.get("spec") or {}
    return [c for c in COMPONENTS if spec.get(c) is not None]


def groups_of(isvc: Mapping[str, Any]) -> list[Obj]:
    return list(((isvc.get("spec") or {}).get("rollout") or {}).get("groups") or [])


def active_run(isvc: Mapping[str, Any]) -> Obj | None:
    run = (((isvc.get("status") or {}).get("rollout") or {}).get("activeRun")) or None
    return dict(run) if run else None


def pinned_groups(isvc: Mapping[str, Any]) -> list[Obj]:
    run = active_run(isvc) or {}
    return [dict(g.get("group") or {}) for g in (run.get("plan") or {}).get("groups") or []]


def strategy(group: Mapping[str, Any]) -> str:
    if group.get("canary") is not None:
        return "Canary"
    if group.get("rollingUpdate") is not None:
        return "RollingUpdate"
    if group.get("blueGreen") is not None:
        return "BlueGreen"
    progression = (group.get("policyRef") or {}).get("progression")
    return {"canary": "Canary", "rollingUpdate": "RollingUpdate", "blueGreen": "BlueGreen"}.get(
        str(progression), "BlueGreen"
    )


def percent(value: Any) -> str:
    text = str(value)
    return text if text.endswith("%") else f"{text}%"


def condition(isvc: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    found = [c for c in (isvc.get("status") or {}).get("conditions") or [] if c.get("type") == type_]
    return found[0] if len(found) == 1 else None


@dataclass(slots=True)
class ComponentRollout:
    type: str
    values: dict[str, str] = field(default_factory=dict)
    issues: list[str] = field(default_factory=list)
    phase: str | None = None


@dataclass(slots=True)
class RolloutSummary:
    state: str
    reported: str
    evidence: str
    epoch: str
    coordination: str
    components: list[ComponentRollout]
    issues: list[str]
    groups: list[Obj]

    @property
    def warnings(self) -> list[str]:
        return ["PartialData"] if self.issues or any(c.issues for c in self.components) else []


def _group_of(groups: Sequence[Mapping[str, Any]], component: str) -> int | None:
    for i, group in enumerate(groups):
        if component in (group.get("components") or []):
            return i
    return None


def _component(
    isvc: Mapping[str, Any], component: str, plan: Sequence[Mapping[str, Any]]
) -> ComponentRollout:
    entry = ((isvc.get("status") or {}).get("components") or {}).get(component)
    out = ComponentRollout(component)
    index = _group_of(plan, component)
    group = plan[index] if index is not None else {}
    out.values["STRATEGY"] = strategy(group) if index is not None else "Independent"
    if index is not None:
        out.values["GROUP"] = str(index)
    if entry is None:
        out.issues.append("ComponentStatusMissing")
        return out
    lifecycle = entry.get("lifecycle") or {}
    phase = entry.get("rolloutPhase")
    if (
        phase is None
        and lifecycle.get("currentRevision")
        and (lifecycle.get("currentRevision") == lifecycle.get("updateRevision"))
    ):
        phase = "Stable"  # current and update revisions match: nothing is rolling out
    if (
        phase is None
        and index is None
        and entry.get("latestRolledoutRevision")
        and (entry.get("latestRolledoutRevision") == entry.get("latestReadyRevision"))
    ):
        phase = "Stable"
    out.phase = phase
    if phase:
        out.values["PHASE"] = str(phase)
    if index is not None:
        out.values["GROUP-PHASE"] = str(phase or "Unknown")
    canary = entry.get("canary") or {}
    steps = list((group.get("canary") or {}).get("steps") or [])
    if canary and steps:
        step_index = canary.get("currentStep")
        if isinstance(step_index, int) and 0 <= step_index < len(steps):
            step = steps[step_index]
            out.values["STEP"] = f"{step_index + 1}/{len(steps)}"
            out.values["GATE"] = gate(step)
            out.values["CAPACITY"] = percent(step.get("capacity"))
            observed = canary.get("observedTrafficWeight", 0)
            out.values["TRAFFIC"] = f"{step.get('traffic', 0)}% -> {observed}%"
            if not isinstance(observed, int) or not 0 <= observed <= 100:
                out.issues.append("TrafficInvalid")
        else:
            out.issues.append("CanaryStepInvalid")
    elif canary and index is None:
        out.issues.append("CanaryStatusUnexpected")
    elif not canary and out.values["STRATEGY"] == "Canary" and phase in ("Canarying", "Paused", "Promoting"):
        out.issues.append("CanaryStatusMissing")
    for key, value in (
        ("ROLLED-OUT", entry.get("latestRolledoutRevision")),
        ("READY", entry.get("latestReadyRevision")),
        ("PREVIOUS", entry.get("previousRolledoutRevision")),
    ):
        if value:
            out.values[key] = str(value)
    return out


def summarize(isvc: Mapping[str, Any]) -> RolloutSummary:
    """The rollout state of the whole service and each declared component."""
    declared = declared_components(isvc)
    plan = pinned_groups(isvc) or groups_of(isvc)
    components = [_component(isvc, c, plan) for c in declared]
    if not declared:
        return RolloutSummary(
            "NotConfigured", "NotConfigured", "Declared", "NotApplicable", "NotApplicable", [], [], plan
        )
    states = {_PHASE_STATE.get(str(c.phase), "Unknown") for c in components}
    coordination_status = ((isvc.get("status") or {}).get("rolloutCoordination") or {}).get("groups") or []
    if any((g or {}).get("phase") == "Staged" for g in coordination_status):
        states.add("Staged")
    reported = next(s for s in REPORTED_ORDER if s in states or s == "Succeeded")
    coordinated = [g for g in plan if strategy(g) in ("BlueGreen", "RollingUpdate")]
    if coordinated:
        cond = condition(isvc, "RolloutCoordinationReady")
        coord = str(cond.get("status")) if cond else "Unobserved"
    else:
        coord = "NotApplicable"
    return RolloutSummary(
        "Unknown", reported, "Reported", "Unverifiable", coord, components, ["EpochUnverifiable"], plan
    )


def status_rows(summary: RolloutSummary) -> list[list[str]]:
    """FIELD, SERVICE, ENGINE, DECODER, ROUTER; a component row only when some component has it."""
    by_type = {c.type: c for c in summary.components}
    service = [summary.state, summary.reported, summary.evidence, summary.epoch, summary.coordination]
    rows = [[name, value, "-", "-", "-"] for name, value in zip(STATUS_FIELDS, service, strict=True)]
    for key in COMPONENT_FIELDS:
        cells = [by_type[c].values.get(key, "-") if c in by_type else "-" for c in COMPONENTS]
        if any(cell != "-" for cell in cells):
            rows.append([key, "-", *cells])
    issue_cells = [
        ",".join(by_type[c].issues) if c in by_type and by_type[c].issues else "-" for c in COMPONENTS
    ]
    rows.append(["ISSUES", ",".join(summary.issues) or "-", *issue_cells])
    return rows


def format_status(summary: RolloutSummary) -> str:
    return format_table(("FIELD", "SERVICE", "ENGINE", "DECODER", "ROUTER"), status_rows(summary))


def format_status_wide(summary: RolloutSummary) -> str:
    headers = ("COMPONENT", *COMPONENT_FIELDS, "ISSUES")
    rows = [
        [c.type, *(c.values.get(k, "-") for k in COMPONENT_FIELDS), ",".join(c.issues) or "-"]
        for c in summary.components
    ]
    return format_table(headers, rows or [["-"] * len(headers)])


def status_document(summary: RolloutSummary) -> Obj:
    def component(c: ComponentRollout) -> Obj:
        doc: Obj = {"type": c.type, "strategy": c.values.get("STRATEGY")}
        if "GROUP" in c.values:
            doc["group"] = int(c.values["GROUP"])
        for key, name in (
            ("PHASE", "phase"),
            ("STEP", "step"),
            ("GATE", "gate"),
            ("CAPACITY", "capacity"),
            ("ROLLED-OUT", "rolledOutRevision"),
            ("READY", "readyRevision"),
            ("PREVIOUS", "previousRevision"),
        ):
            if key in c.values:
                doc[name] = c.values[key]
        doc["traffic"] = [c.values["TRAFFIC"]] if "TRAFFIC" in c.values else []
        if c.issues:
            doc["issues"] = [{"code": i} for i in c.issues]
        return doc

    return {
        "summary": {
            "state": summary.state,
            "reportedState": summary.reported,
            "evidence": summary.evidence,
            "epoch": summary.epoch,
            "coordinationReady": summary.coordination,
        },
        "groups": [
            {"index": i, "strategy": strategy(g), "components": list(g.get("components") or [])}
            for i, g in enumerate(summary.groups)
        ],
        "components": [component(c) for c in summary.components],
        "issues": [{"code": i} for i in summary.issues],
    }


# --- explain ------------------------------------------------------------------------------------


def _group_rows(index: int, group: Mapping[str, Any], source: str) -> list[tuple[str, str]]:
    comps = ",".join(group.get("components") or [])
    rows = [(f"GROUP {index}", f"{strategy(group)}; components={comps}; source={source}")]
    steps = list((group.get("canary") or {}).get("steps") or [])
    for i, step in enumerate(steps):
        rows.append(
            (
                f"STEP {i + 1}/{len(steps)}",
                f"capacity={percent(step.get('capacity'))}; traffic={step.get('traffic', 0)}%; "
                f"gate={gate(step)}",
            )
        )
    return rows


def declared_source(group: Mapping[str, Any]) -> str:
    if group.get("canary") or group.get("blueGreen") or group.get("rollingUpdate"):
        return "Inline"
    return "Policy" if group.get("policyRef") else "Defaulted"


def _plan_condition(isvc: Mapping[str, Any], type_: str) -> str:
    cond = condition(isvc, type_)
    if cond is None:
        return "Unobserved; evidence=Unavailable"
    return f"{cond.get('status')}/{cond.get('reason') or '-'}; evidence=Reported"


def explain_rows(isvc: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """VIEW, ITEM, DETAIL for the Declared, Live and Effective plans."""
    declared = groups_of(isvc)
    run = active_run(isvc)
    rows: list[tuple[str, str, str]] = []

    def section(view: str, items: list[tuple[str, str]]) -> None:
        for i, (item, detail) in enumerate(items):
            rows.append((view if i == 0 else "", item, detail))

    items = [("PLAN", f"groups={len(declared)}")]
    for i, group in enumerate(declared):
        items += _group_rows(i, group, f"Declared/{declared_source(group)}")
    section("Declared", items)
    live = declared if run else []
    items = [("PLAN", f"mode=Live; groups={len(live)}")]
    for i, group in enumerate(live):
        items += _group_rows(i, group, f"Declared/{declared_source(group)}")
    section("Live", items)
    annotations = (isvc.get("metadata") or {}).get("annotations") or {}
    if run:
        pinned = list((run.get("plan") or {}).get("groups") or [])
        items = [("PLAN", f"mode=Pinned; evidence=Reported; groups={len(pinned)}")]
    else:
        pinned = [{"source": declared_source(g), "group": g} for g in declared]
        items = [("PLAN", f"mode=Live; evidence=Declared; groups={len(pinned)}")]
    items += [
        ("READY", _plan_condition(isvc, "RolloutPlanReady")),
        ("DRIFT", _plan_condition(isvc, "RolloutPlanDrift")),
    ]
    if annotations.get("ome.io/rollout-paused") in ("true", "freeze"):
        items.append(("HOLD", "GlobalPause; evidence=Declared"))
    components = (isvc.get("status") or {}).get("components") or {}
    for i, entry in enumerate(pinned):
        group = entry.get("group") or {}
        source = f"Reported/{entry.get('source')}" if run else f"Declared/{entry.get('source')}"
        group_rows = _group_rows(i, group, source)
        items.append(group_rows[0])
        config = []
        if entry.get("policyRef"):
            generation = entry.get("policyGeneration")
            name = (entry.get("policyRef") or {}).get("name")
            config.append(f"policy=RolloutPolicy/{name}" + (f"@{generation}" if generation else ""))
        if entry.get("portableDigest"):
            config.append(f"digest={entry['portableDigest']}")
        for j, value in enumerate(config):
            items.append(("CONFIG" if j == 0 else "", value))
        first = next(iter(group.get("components") or []), None)
        entry_status = components.get(first) or {} if first else {}
        if entry_status.get("rolloutPhase"):
            items.append(("PHASE", str(entry_status["rolloutPhase"])))
        canary = entry_status.get("canary") or {}
        if canary:
            revisions = [f"stable={canary['stableRevisionHash']}"] if canary.get("stableRevisionHash") else []
            if canary.get("canaryRevisionHash"):
                revisions.append(f"target={canary['canaryRevisionHash']}")
            if canary.get("rolledBackRevisionHash"):
                revisions.append(f"rejected={canary['rolledBackRevisionHash']}")
            items.append(("REVISIONS", ",".join(revisions) or "-"))
        traffic = [
            f"{c}:{t.get('revisionName')}={t.get('percent')}%"
            for c in group.get("components") or []
            for t in (components.get(c) or {}).get("traffic") or []
        ]
        if traffic:
            items.append(("TRAFFIC", ",".join(traffic)))
        items += group_rows[1:]
    if run or (isvc.get("status") or {}).get("components"):
        items.append(("ISSUES", "EpochUnverifiable"))
    section("Effective", items)
    return rows


def format_explain(rows: Sequence[tuple[str, str, str]]) -> str:
    return format_table(("VIEW", "ITEM", "DETAIL"), rows)


def explain_document(isvc: Mapping[str, Any]) -> Obj:
    run = active_run(isvc)
    return {
        "declared": {"groups": groups_of(isvc)},
        "live": {"mode": "Live", "groups": groups_of(isvc) if run else []},
        "effective": {
            "mode": "Pinned" if run else "Live",
            "evidence": "Reported" if run else "Declared",
            "ready": _plan_condition(isvc, "RolloutPlanReady"),
            "drift": _plan_condition(isvc, "RolloutPlanDrift"),
            "activeRun": run,
        },
        "rows": [{"view": v, "item": i, "detail": d} for v, i, d in explain_rows(isvc)],
    }


def live_plan_digest(isvc: Mapping[str, Any]) -> str | None:
    """The plan digest of the controller's current render (`status.rollout.groups`), the value the
    repin annotation names: the controller joins every group's digest (a group without a body counts
    as the default blue-green one), so a multi-group plan has one digest, not a list."""
    groups = ((isvc.get("status") or {}).get("rollout") or {}).get("groups") or []
    if not groups:
        return None
    return canary_run.plan_digest([g.get("observedDigest") for g in groups])


def pinned_plan_digest(isvc: Mapping[str, Any]) -> str | None:
    """The plan digest of the active run's pinned plan, computed the same way as the controller's."""
    run = active_run(isvc) or {}
    groups = (run.get("plan") or {}).get("groups") or []
    if not groups:
        return None
    return canary_run.plan_digest([g.get("portableDigest") for g in groups])


def traffic_cell(value: Any) -> str:
    return dash(value)
