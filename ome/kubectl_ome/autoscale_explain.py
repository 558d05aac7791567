"""`kubectl ome autoscale explain` (pure): which autoscaler each component should have, from the
InferenceService and its runtime, compared with what the status reports.

The layer that supplies a component's autoscaler is the first of isvc (inline `autoscaler`), policy
(`autoscalerPolicyRef`, not read by the CLI), runtime (the runtime's component `autoscaler`), legacy
(the `ome.io/autoscalerClass` annotations, RawDeployment only) and default (an HPA at 80% CPU).
STATE is the first that applies of Invalid, Unsupported, Mismatch, Partial and OK.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ome.kubectl_ome.effective import ComponentMode
from ome.kubectl_ome.table import format_table

Obj = dict[str, Any]

ROWS: Final = (
    "STATE",
    "MODE",
    "POLICY",
    "DESIRED",
    "RANGE",
    "ZERO",
    "EXPECTED-TARGET",
    "REPORTED",
    "REPORTED-TARGET",
    "CUR/DES",
    "LAST-SCALE",
    "CONDITION-EVIDENCE",
    "CONDITIONS",
    "CHECK",
    "WHY",
)
MODES: Final = {
    "RawDeployment": "Raw",
    "OMENative": "Native",
    "MultiNode": "Multi",
    "VirtualDeployment": "Virtual",
}
STATES: Final = (
    ("Invalid", "Invalid"),
    ("Unsupported", "Unsupported"),
    ("Mismatch", "ReportedMismatch"),
    ("Partial", "Partial"),
    ("OK", "Consistent"),
)
# WHY: (alias, code, state), most severe first.
REASONS: Final = {
    "class-invalid": ("AutoscalerClassInvalid", "Invalid"),
    "bounds-invalid": ("ReplicaBoundsInvalid", "Invalid"),
    "status-invalid": ("StatusInvalid", "Invalid"),
    "mode-unsupported": ("DeploymentModeUnsupported", "Unsupported"),
    "class-mismatch": ("ReportedClassMismatch", "Mismatch"),
    "owner-mismatch": ("ReportedOwnershipMismatch", "Mismatch"),
    "source-mismatch": ("ReportedSpecSourceMismatch", "Mismatch"),
    "target-mismatch": ("ReportedTargetMismatch", "Mismatch"),
    "unexpected-component": ("ReportedComponentUnexpected", "Mismatch"),
    "policy-unavailable": ("PolicyResolutionUnavailable", "Partial"),
    "status-missing": ("StatusNotReported", "Partial"),
    "status-stale": ("StatusStale", "Partial"),
    "status-unobserved": ("StatusUnobserved", "Partial"),
}
_ORDER: Final = list(REASONS)
_CLASSES: Final = ("HPA", "KEDA", "External", "None")


@dataclass(slots=True)
class ComponentExplain:
    component: str
    values: dict[str, str] = field(default_factory=dict)
    why: list[str] = field(default_factory=list)


def _layer(
    isvc: Mapping[str, Any], runtime: Mapping[str, Any] | None, comp: str, mode: str
) -> tuple[str, str]:
    """(class, layer) the component should have."""
    body = ((isvc.get("spec") or {}).get(comp)) or {}
    config = (((runtime or {}).get("spec") or {}).get(f"{comp}Config")) or {}
    annotations = ((isvc.get("metadata") or {}).get("annotations")) or {}
    if body.get("autoscaler"):
        return str((body["autoscaler"] or {}).get("class") or "HPA"), "isvc"
    if body.get("autoscalerPolicyRef"):
        return "?", "policy"
    if config.get("autoscaler"):
        return str((config["autoscaler"] or {}).get("class") or "HPA"), "runtime"
    legacy = annotations.get("ome.io/autoscalerClass")
    if legacy and mode == "RawDeployment":
        return {"hpa": "HPA", "keda": "KEDA", "external": "External", "none": "None"}.get(
            str(legacy).lower(), str(legacy)
        ), "legacy"
    return "HPA", "default"


def _range(isvc: Mapping[str, Any], runtime: Mapping[str, Any] | None, comp: str) -> tuple[str, bool]:
    body = ((isvc.get("spec") or {}).get(comp)) or {}
    config = (((runtime or {}).get("spec") or {}).get(f"{comp}Config")) or {}
    low = body.get("minReplicas", config.get("minReplicas"))
    high = body.get("maxReplicas", config.get("maxReplicas"))
    low = 1 if low is None else low
    high = max(low, 1) if high is None else high
    if not isinstance(low, int) or not isinstance(high, int) or low < 0 or (high and high < low):
        return "invalid", False
    return f"{low}..{high}", True


def explain_component(
    isvc: Mapping[str, Any], runtime: Mapping[str, Any] | None, mode: ComponentMode, freshness: str
) -> ComponentExplain:
    comp, name = mode.component, str((isvc.get("metadata") or {}).get("name"))
    out = ComponentExplain(comp)
    v = out.values
    v["MODE"] = MODES.get(mode.mode, mode.mode)
    spec_policy = ((isvc.get("spec") or {}).get("scalingPolicy") or {}).get("mode")
    runtime_policy = (((runtime or {}).get("spec") or {}).get("scalingPolicy") or {}).get("mode")
    v["POLICY"] = str(spec_policy or runtime_policy or "Independent")
    supported = mode.mode in ("RawDeployment", "OMENative")
    cls, layer = _layer(isvc, runtime, comp, mode.mode)
    if not supported:
        v["DESIRED"] = v["EXPECTED-TARGET"] = "unsupported"
        out.why.append("mode-unsupported")
    elif cls not in (*_CLASSES, "?"):
        v["DESIRED"] = v["EXPECTED-TARGET"] = "invalid"
        out.why.append("class-invalid")
    else:
        v["DESIRED"] = f"{cls}/{layer}"
        kind = "Deployment" if mode.mode == "RawDeployment" else "InferenceReplica"
        v["EXPECTED-TARGET"] = "?" if layer == "policy" else f"{kind}/{name}-{comp}"
        if layer == "policy":
            out.why.append("policy-unavailable")
    v["RANGE"], bounds_ok = _range(isvc, runtime, comp)
    if not bounds_ok:
        out.why.append("bounds-invalid")
    v["ZERO"] = "?" if layer == "policy" else "-"
    entry = (((isvc.get("status") or {}).get("components")) or {}).get(comp) or {}
    scaler = entry.get("autoscaler") or {}
    target = entry.get("scaleTargetRef") or {}
    if not scaler:
        v.update(
            {
                "REPORTED": "-",
                "REPORTED-TARGET": "-",
                "CUR/DES": "-",
                "LAST-SCALE": "-",
                "CONDITION-EVIDENCE": "missing",
                "CONDITIONS": "-",
                "CHECK": "missing",
            }
        )
        out.why.append("status-missing")
    else:
        v["REPORTED"] = (
            f"{scaler.get('class', '?')}/{scaler.get('specSource', '?')}/{scaler.get('managedBy', '?')}"
        )
        v["REPORTED-TARGET"] = f"{target.get('kind')}/{target.get('name')}" if target.get("name") else "-"
        cur, des = scaler.get("currentReplicas") or 0, scaler.get("desiredReplicas") or 0
        v["CUR/DES"] = f"{cur}/{des}" + ("?" if not cur or not des else "")
        v["LAST-SCALE"] = str(scaler.get("lastScaleTime") or "-")
        conditions = scaler.get("conditions") or []
        v["CONDITION-EVIDENCE"] = "reported" if conditions else "missing"
        v["CONDITIONS"] = ",".join(f"{c.get('type')}={c.get('status')}" for c in conditions) or "-"
        mismatches = []
        if supported and layer != "policy":
            if scaler.get("class") != cls:
                mismatches.append("class-mismatch")
            owner = "ome" if cls in ("HPA", "KEDA") else ("external" if cls == "External" else "none")
            if scaler.get("managedBy") != owner:
                mismatches.append("owner-mismatch")
            if scaler.get("specSource") != layer:
                mismatches.append("source-mismatch")
            if v["REPORTED-TARGET"] != v["EXPECTED-TARGET"]:
                mismatches.append("target-mismatch")
        out.why += mismatches
        v["CHECK"] = "mismatch" if mismatches else ("unknown" if layer == "policy" else "match")
    if freshness in ("status-stale", "status-unobserved", "status-invalid"):
        out.why.append(freshness)
    out.why.sort(key=_ORDER.index)
    return out


def freshness_of(isvc: Mapping[str, Any]) -> str | None:
    generation = (isvc.get("metadata") or {}).get("generation")
    observed = (isvc.get("status") or {}).get("observedGeneration")
    if observed is None:
        return "status-unobserved"
    if isinstance(generation, int) and isinstance(observed, int):
        if observed > generation:
            return "status-invalid"
        if observed < generation:
            return "status-stale"
    return None


def explain(
    isvc: Mapping[str, Any], runtime: Mapping[str, Any] | None, modes: Sequence[ComponentMode]
) -> tuple[str, list[ComponentExplain], list[str]]:
    """The overall STATE, one column per component, and the service-level reasons."""
    fresh = freshness_of(isvc) or ""
    columns = [explain_component(isvc, runtime, m, fresh) for m in modes]
    declared = {m.component for m in modes}
    reported = ((isvc.get("status") or {}).get("components")) or {}
    service = [f"{c}:unexpected-component" for c in reported if c not in declared]
    severities = {REASONS[w][1] for col in columns for w in col.why}
    if service:
        severities.add("Mismatch")
    state = next((s for s, _ in STATES if s in severities), "OK")
    for col in columns:
        col.values["STATE"] = state
        col.values["WHY"] = (
            (col.why[0] + (f",+{len(col.why) - 1}" if len(col.why) > 1 else "")) if col.why else "-"
        )
    return state, columns, service


def format_explain(columns: Sequence[ComponentExplain], service: Sequence[str], state: str) -> str:
    headers = ["FIELD", *(c.component.upper() for c in columns)]
    rows = [[row, *(c.values.get(row, "-") for c in columns)] for row in ROWS]
    if service:
        headers.append("SERVICE")
        for row in rows:
            row.append(state if row[0] == "STATE" else (",".join(service) if row[0] == "WHY" else "-"))
    return format_table(headers, rows)


def explain_document(state: str, columns: Sequence[ComponentExplain], service: Sequence[str]) -> Obj:
    json_state = dict(STATES)[state]
    return {
        "summary": {"state": json_state},
        "components": [
            {
                "component": c.component,
                **{k.lower(): v for k, v in c.values.items()},
                "reasons": [{"why": w, "code": REASONS[w][0]} for w in c.why],
            }
            for c in columns
        ],
        "serviceReasons": list(service),
    }
