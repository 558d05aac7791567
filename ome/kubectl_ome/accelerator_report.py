"""`accelerator explain` (pure): the AcceleratorClass or policy each of an InferenceService's engine
and decoder asks for, and the base requests their pods start from.

OME v1.3 records no selected class in the status (a known bug the docs keep), so SEL says why no
selection is reported: `Missing` with a current status, `Unavail` when it is stale, unobserved or the
runtime in force is unknown, `Invalid` when the status claims a newer generation, `None` for a
component with neither class nor policy. The base requests come from the runtime's component config
merged with the InferenceService's (the runner's container, or the leader's for a multi-node one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from ome.kubectl_ome import snapshot
from ome.kubectl_ome.output import document, rfc3339
from ome.kubectl_ome.table import format_table, shorten_end, shorten_middle
from ome.resolution import accelerators
from ome.resolution.components import RUNTIME_CONFIG_KEYS
from ome.resolution.merge import MAIN_CONTAINER, merge_component

Obj = dict[str, Any]

COMPONENTS: Final = ("engine", "decoder")
POLICY_SHORT: Final = {
    "BestFit": "BestFit",
    "Cheapest": "Cheapest",
    "MostCapable": "MostCapable",
    "FirstAvailable": "FirstAvail",
}
SEL_SHORT: Final = {
    "NotReported": "Missing",
    "Unavailable": "Unavail",
    "Invalid": "Invalid",
    "NotConfigured": "None",
}
HEADERS: Final = ("COMP", "POLICY", "CLASS", "SEL", "REQUESTS", "ISS")
WIDE_HEADERS: Final = ("SCOPE", "COMP", "FIELD", "VALUE", "EVIDENCE")
UNAVAILABLE_CONFIG: Final = "ActiveConfigurationUnavailable"


@dataclass(slots=True)
class Source:
    kind: str
    name: str
    generation: str


@dataclass(slots=True)
class Component:
    name: str
    mode: str
    """Class, Policy, NotConfigured or Invalid."""
    policy: str | None
    klass: str | None
    evidence: str
    selection: str
    base_state: str
    base: dict[str, str] = field(default_factory=dict)
    effective: str = "Unavailable"
    issues: list[str] = field(default_factory=list)

    @property
    def configured(self) -> bool:
        return self.mode != "NotConfigured"


@dataclass(slots=True)
class Report:
    namespace: str
    name: str
    freshness: str
    components: list[Component]
    issues: list[tuple[str, str]]
    """(component or `-`, code), in row order."""
    sources: list[Source]
    collected_at: datetime

    @property
    def state(self) -> str:
        invalid = any(c.mode == "Invalid" or c.base_state == "Invalid" for c in self.components) or (
            self.freshness == "Invalid" and any(c.configured for c in self.components)
        )
        if invalid:
            return "Invalid"
        if not self.issues and not any(c.configured for c in self.components):
            return "NotConfigured"
        return "Partial"

    def warnings(self) -> list[str]:
        codes = {code for _, code in self.issues}
        out = []
        if self.state in ("Partial", "Invalid"):
            out.append("PartialData")
        if "StatusStale" in codes:
            out.append("StaleEvidence")
        if codes & {UNAVAILABLE_CONFIG, "BaseRequestsUnavailable"}:
            out.append("SourceUnavailable")
        return out


def status_freshness(isvc: Mapping[str, Any]) -> str:
    generation = int((isvc.get("metadata") or {}).get("generation") or 0)
    observed = (isvc.get("status") or {}).get("observedGeneration")
    if not isinstance(observed, int) or observed <= 0:
        return "Unobserved"
    if observed > generation:
        return "Invalid"
    return "Current" if observed == generation else "Stale"


def _source_of(isvc: Mapping[str, Any], component: str, key: str) -> str:
    override = ((isvc.get("spec") or {}).get(component) or {}).get("acceleratorOverride") or {}
    return "Declared/Component" if override.get(key) else "Declared/Service"


def base_requests(
    runtime_spec: Mapping[str, Any], isvc: Mapping[str, Any], component: str
) -> Mapping[str, Any]:
    """The serving container's requests (the leader's in a multi-node component)."""
    merged = merge_component(
        runtime_spec.get(RUNTIME_CONFIG_KEYS[component]), (isvc.get("spec") or {})[component]
    )
    leader = merged.get("leader")
    block: Mapping[str, Any] = leader if isinstance(leader, Mapping) else merged
    runner = block.get("runner") if isinstance(block.get("runner"), Mapping) else None
    if runner is not None and (runner.get("resources") or {}).get("requests"):
        return dict((runner.get("resources") or {}).get("requests") or {})
    for container in runtime_spec.get("containers") or []:
        if isinstance(container, Mapping) and container.get("name") == (
            (runner or {}).get("name") or MAIN_CONTAINER
        ):
            return dict((container.get("resources") or {}).get("requests") or {})
    return {}


def build(
    isvc: Mapping[str, Any],
    runtime_spec: Mapping[str, Any] | None,
    sources: Sequence[Source],
    unavailable: str | None,
    now: datetime,
) -> Report:
    """`unavailable` is the issue that keeps the runtime in force from the report, if any."""
    meta, spec = isvc.get("metadata") or {}, isvc.get("spec") or {}
    freshness = status_freshness(isvc)
    components: list[Component] = []
    issues: list[tuple[str, str]] = []
    if unavailable:
        issues.append(("-", unavailable))
    for name in COMPONENTS:
        if spec.get(name) is None:
            continue
        klass = accelerators.requested_class(dict(isvc), name)
        policy = accelerators.requested_policy(dict(isvc), name)
        comp_issues: list[str] = []
        if klass is not None and not snapshot.valid_name(klass):
            mode = "Invalid"
            comp_issues.append("DeclaredClassInvalid")
        elif klass is not None:
            mode = "Class"
        elif policy is not None:
            mode = "Policy"
        else:
            mode = "NotConfigured"
        if mode == "NotConfigured":
            selection = "NotConfigured"
        elif unavailable:
            selection = "Unavailable"
        elif freshness == "Current":
            selection = "NotReported"
            comp_issues.append("SelectionNotReported")
        elif freshness == "Invalid":
            selection = "Invalid"
            comp_issues.append("StatusInvalid")
        else:
            selection = "Unavailable"
            comp_issues.append("StatusStale" if freshness == "Stale" else "StatusUnobserved")
        base: dict[str, str] = {}
        if runtime_spec is None:
            base_state = "Unavailable"
            if not unavailable:
                comp_issues.append("BaseRequestsUnavailable")
        else:
            raw = base_requests(runtime_spec, isvc, name)
            if not isinstance(raw, Mapping) or any(
                accelerators.quantity(v) is None or (accelerators.quantity(v) or 0) < 0 for v in raw.values()
            ):
                base_state = "Invalid"
                comp_issues.append("RequestsInvalid")
            else:
                base_state = "Available"
                base = {str(k): str(v) for k, v in sorted(raw.items())}
        effective = (
            "NotConfigured"
            if mode == "NotConfigured"
            else "Invalid"
            if freshness == "Invalid"
            else "Unavailable"
        )
        evidence = _source_of(isvc, name, "acceleratorClass" if klass else "policy")
        components.append(
            Component(
                name, mode, policy, klass, evidence, selection, base_state, base, effective, comp_issues
            )
        )
        issues += [(name, code) for code in comp_issues]
    return Report(
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
        freshness,
        components,
        issues,
        sorted(sources, key=lambda s: s.kind),
        now,
    )


def _requests(c: Component) -> str:
    if c.base_state == "Unavailable":
        return "base:Unknown"
    if c.base_state == "Invalid":
        return "base:Invalid"
    if not c.base:
        return "None"
    first = next(iter(c.base))
    text = f"base:{first}={c.base[first]}" + (f",+{len(c.base) - 1}" if len(c.base) > 1 else "")
    return shorten_end(text, 18)


def table(report: Report) -> str:
    shared = sum(1 for comp, _ in report.issues if comp == "-")
    rows = []
    for c in report.components:
        policy = (
            "Explicit" if c.mode == "Class" else POLICY_SHORT.get(str(c.policy), "-") if c.policy else "-"
        )
        klass = shorten_middle(c.klass, 16, 6) if c.klass and c.mode == "Class" else "-"
        rows.append(
            (c.name, policy, klass, SEL_SHORT[c.selection], _requests(c), str(len(c.issues) + shared))
        )
    return format_table(HEADERS, rows)


def wide_rows(report: Report) -> list[tuple[str, str, str, str, str]]:
    rows = [
        ("SUMMARY", "-", "STATE", report.state, "Computed"),
        ("SUMMARY", "-", "STATUS_FRESHNESS", report.freshness, "Computed"),
    ]
    for c in report.components:
        rows.append(("INTENT", c.name, "MODE", c.mode, "Declared"))
        if c.policy:
            rows.append(("INTENT", c.name, "POLICY", c.policy, _policy_evidence(c)))
        if c.klass:
            rows.append(("INTENT", c.name, "CLASS", c.klass, c.evidence))
        reason = {"NotReported": "NotReported", "Invalid": "Invalid"}.get(c.selection, "Unavailable")
        if c.selection == "NotConfigured":
            reason = "NotReported"
        rows += [
            ("SELECTION", c.name, "STATE", c.selection, "Unavailable"),
            ("SELECTION", c.name, "REASON_STATE", reason, "Unavailable"),
            ("CLASS", c.name, "STATE", "NotRequested", "-"),
            (
                "REQUEST",
                c.name,
                "BASE_STATE",
                c.base_state,
                "Computed" if c.base_state != "Unavailable" else "Unavailable",
            ),
        ]
        if c.base_state == "Available":
            base = ",".join(f"{k}={v}" for k, v in c.base.items()) or "None"
            rows.append(("REQUEST", c.name, "BASE", base, "Computed"))
        rows.append(
            (
                "REQUEST",
                c.name,
                "EFFECTIVE_STATE",
                c.effective,
                "Unavailable" if c.effective == "Unavailable" else "Computed",
            )
        )
    rows += [("ISSUE", comp, code, "-", "Computed") for comp, code in report.issues]
    at = rfc3339(report.collected_at)
    for s in report.sources:
        rows += [
            ("SOURCE", s.kind, "NAME", s.name, "Observed"),
            ("SOURCE", s.kind, "GENERATION", s.generation, "Observed"),
            ("SOURCE", s.kind, "COLLECTED_AT", at, "Observed"),
        ]
    rows += [("WARNING", "-", "CODE", w, "Computed") for w in report.warnings()]
    return rows


def _policy_evidence(c: Component) -> str:
    return c.evidence if not c.klass else "Declared"


def wide(report: Report) -> str:
    return format_table(WIDE_HEADERS, wide_rows(report))


def report_document(report: Report) -> Obj:
    components = []
    for c in report.components:
        entry: Obj = {"component": c.name, "mode": c.mode}
        if c.policy:
            entry["policy"] = c.policy
        if c.klass:
            entry["class"] = c.klass
        entry.update(
            {
                "selectionState": c.selection,
                "classState": "NotRequested",
                "baseRequestsState": c.base_state,
                "baseRequests": dict(c.base),
                "effectiveRequestsState": c.effective,
                "issues": list(c.issues),
            }
        )
        components.append(entry)
    at = rfc3339(report.collected_at)
    return document(
        "AcceleratorExplainReport",
        {
            "state": report.state,
            "statusFreshness": report.freshness,
            "components": components,
            "issues": [{"component": comp, "code": code} for comp, code in report.issues],
        },
        metadata={"namespace": report.namespace, "name": report.name},
        collectedAt=at,
        sources=[
            {"kind": s.kind, "name": s.name, "generation": s.generation, "collectedAt": at}
            for s in report.sources
        ],
        warnings=report.warnings(),
    )
