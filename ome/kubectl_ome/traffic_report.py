"""`traffic status` and `traffic explain` reports (pure): what the controller wrote in an
InferenceService's status about how it receives traffic, and how that compares with what it declares.

Every value carries a SOURCE `<evidence>/<freshness>`. Freshness comes from the BackendPolicyReady
condition's observedGeneration; endpoints, canaries and revision weights carry no generation, so they
are always Unverifiable. STATE is the first that applies of Invalid, Unavailable, Partial, Degraded,
Pending, Reported (Pending/Reported drop to Partial when evidence is missing, stale or cut).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final
from urllib.parse import urlsplit

from ome.kubectl_ome import snapshot
from ome.kubectl_ome.output import document, rfc3339
from ome.kubectl_ome.rollout_report import groups_of, pinned_groups
from ome.resolution import traffic_policy as tp
from ome.resolution.modes import COMPONENTS

Obj = dict[str, Any]

ALGORITHMS: Final = ("Default", "RoundRobin", "LeastRequest", "Random", "ConsistentHash")
READY_PAIRS: Final = {
    ("Unknown", tp.PENDING),
    ("True", tp.ACCEPTED_BY_GATEWAY),
    ("False", tp.GATEWAY_REJECTED),
    ("False", tp.NO_TRANSLATOR),
    ("False", tp.TRANSLATION_FAILED),
}
MAX_ROUTES: Final = 4
MAX_ENDPOINTS: Final = 16
MAX_TARGETS: Final = 8
INVALID_ISSUES: Final = frozenset(
    {
        "AlgorithmInvalid",
        "PolicyReferenceInvalid",
        "PolicyKindUnsupported",
        "ConditionInvalid",
        "ConditionConflict",
        "RouteInvalid",
        "EndpointInvalid",
        "CanaryInvalid",
        "AllocationInvalid",
        "AllocationConflict",
        "UnknownComponentStatus",
        "StatusCombinationInvalid",
    }
)
TRUNCATION_ISSUES: Final = frozenset({"RoutesTruncated", "EndpointsTruncated", "AllocationsTruncated"})
SUPPORT_INVALID: Final = frozenset(
    {
        "AlgorithmInvalid",
        "ConditionInvalid",
        "ConditionConflict",
        "PolicyReferenceInvalid",
        "PolicyKindUnsupported",
        "StatusCombinationInvalid",
    }
)
REALIZE_INVALID: Final = frozenset(
    {
        "RouteInvalid",
        "EndpointInvalid",
        "CanaryInvalid",
        "AllocationInvalid",
        "AllocationConflict",
        "UnknownComponentStatus",
    }
)


@dataclass(slots=True)
class Canary:
    component: str
    step: int
    total: int
    weight: int
    stable: str
    canary: str


@dataclass(slots=True)
class TrafficStatus:
    """The `traffic status` report's content."""

    namespace: str
    name: str
    uid: str
    generation: int
    has_traffic: bool
    fresh: str
    """The freshness of the values tied to BackendPolicyReady."""
    state: str = "Unavailable"
    translator: str = "Unavailable"
    algorithm: str = "Unknown"
    ready: str = "Unknown/NotReported"
    ready_status: str | None = None
    ready_reason: str | None = None
    unsupported: str = "Unknown"
    policy: str | None = None
    routes: list[str] = field(default_factory=list)
    endpoints: list[str] = field(default_factory=list)
    canaries: list[Canary] = field(default_factory=list)
    targets: list[tuple[str, str, str, int]] = field(default_factory=list)
    """(component, role, revision, percent)."""
    conditions: list[str] = field(default_factory=list)
    issues: list[tuple[str, str]] = field(default_factory=list)
    """(component or `-`, code)."""

    def issue(self, code: str, component: str = "-") -> None:
        if (component, code) not in self.issues:
            self.issues.append((component, code))

    def codes(self) -> set[str]:
        return {code for _, code in self.issues}

    @property
    def reported(self) -> str:
        return f"Reported/{self.fresh}" if self.has_traffic else "Unavailable/Unavailable"

    def warnings(self) -> list[str]:
        out = []
        if self.state in ("Invalid", "Partial") or self.codes() & INVALID_ISSUES:
            out.append("PartialData")
        if self.fresh == "Stale":
            out.append("StaleEvidence")
        if self.codes() & TRUNCATION_ISSUES:
            out.append("Truncated")
        return out


def _valid_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return (
        parts.scheme in ("http", "https")
        and bool(parts.hostname)
        and not parts.username
        and not parts.query
        and not parts.fragment
    )


def _policy_ref(ref: Mapping[str, Any], namespace: str) -> str:
    return f"{ref.get('apiVersion')}/{ref.get('kind')}/{namespace}/{ref.get('name')}"


def _translator(ref: Mapping[str, Any]) -> str | None:
    group = str(ref.get("apiVersion") or "").split("/")[0]
    if ref.get("kind") == "BackendTrafficPolicy" and group == "gateway.envoyproxy.io":
        return tp.ENVOY
    if ref.get("kind") == "DestinationRule" and group == "networking.istio.io":
        return tp.ISTIO
    return None


def _canary_steps(isvc: Mapping[str, Any], component: str) -> list[Obj] | None:
    for group in pinned_groups(isvc) or groups_of(isvc):
        if component in (group.get("components") or []) and group.get("canary") is not None:
            return list((group.get("canary") or {}).get("steps") or [])
    return None


def _conditions(out: TrafficStatus, traffic: Mapping[str, Any], now: datetime) -> Mapping[str, Any] | None:
    conditions = [c for c in traffic.get("conditions") or [] if isinstance(c, Mapping)]
    types = [c.get("type") for c in conditions]
    if len(types) != len(set(types)):
        out.issue("ConditionConflict")
    ready = None
    for cond in conditions:
        status, reason = cond.get("status"), cond.get("reason")
        gen = cond.get("observedGeneration")
        at = cond.get("lastTransitionTime")
        out.conditions.append(f"{cond.get('type')}={status}/{reason} gen={gen} at={at}")
        bad = (
            status not in ("True", "False", "Unknown")
            or not isinstance(gen, int)
            or gen <= 0
            or gen > out.generation
            or not at
        )
        if cond.get("type") == tp.BACKEND_POLICY_READY:
            bad = bad or (status, reason) not in READY_PAIRS
            ready = cond
        if bad:
            out.issue("ConditionInvalid")
    out.conditions.sort()
    return ready


def build_status(isvc: Mapping[str, Any], now: datetime) -> TrafficStatus:
    meta, spec, status = isvc.get("metadata") or {}, isvc.get("spec") or {}, isvc.get("status") or {}
    name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
    traffic = status.get("traffic")
    out = TrafficStatus(
        namespace,
        name,
        str(meta.get("uid") or ""),
        int(meta.get("generation") or 0),
        isinstance(traffic, Mapping),
        "Unavailable",
    )
    ready = None
    if isinstance(traffic, Mapping):
        ready = _conditions(out, traffic, now)
        out.fresh = "Unverifiable"
        if (
            ready is not None
            and "ConditionInvalid" not in out.codes()
            and "ConditionConflict" not in out.codes()
        ):
            gen = int(ready.get("observedGeneration") or 0)
            out.fresh = "Current" if gen == out.generation else "Stale"
        if ready is not None:
            out.ready_status = str(ready.get("status"))
            out.ready_reason = str(ready.get("reason"))
            valid = (out.ready_status, out.ready_reason) in READY_PAIRS
            out.ready = (
                f"{out.ready_status}/{out.ready_reason}"
                if valid
                else (
                    f"Unknown/{out.ready_reason}"
                    if out.ready_reason in {r for _, r in READY_PAIRS}
                    else "Unknown/Unknown"
                )
            )
        else:
            out.issue("PolicyConditionMissing")
        algorithm = traffic.get("algorithm")
        if algorithm in ALGORITHMS:
            out.algorithm = str(algorithm)
        elif algorithm:
            out.issue("AlgorithmInvalid")
        ref = traffic.get("backendPolicyResource")
        if isinstance(ref, Mapping) and ref:
            out.policy = _policy_ref(ref, namespace)
            if not snapshot.valid_name(ref.get("name")):
                out.issue("PolicyReferenceInvalid")
            translator = _translator(ref)
            if translator is None:
                out.issue("PolicyKindUnsupported")
            elif out.ready_reason != tp.NO_TRANSLATOR:
                out.translator = translator
            if out.ready_reason == tp.NO_TRANSLATOR:
                out.issue("StatusCombinationInvalid")
        routes = sorted(str(r) for r in traffic.get("targetedHTTPRoutes") or [])
        if (routes or out.ready_status == "True") and out.policy is None:
            out.issue("StatusCombinationInvalid")
        if any(not snapshot.valid_name(r) for r in routes):
            out.issue("RouteInvalid")
        if len(routes) > MAX_ROUTES:
            out.issue("RoutesTruncated")
        out.routes = routes[:MAX_ROUTES]
        has_unsupported = any(
            c.get("type") == tp.UNSUPPORTED_FIELDS
            for c in traffic.get("conditions") or []
            if isinstance(c, Mapping)
        )
        if has_unsupported:
            out.unsupported = "Present"
        elif out.fresh == "Current" and out.ready_reason in (
            tp.PENDING,
            tp.ACCEPTED_BY_GATEWAY,
            tp.GATEWAY_REJECTED,
        ):
            out.unsupported = "None"
    else:
        out.issue("TrafficStatusMissing")
    _endpoints(out, status)
    _components(out, isvc, spec, status)
    out.state = _state(out)
    return out


def _endpoints(out: TrafficStatus, status: Mapping[str, Any]) -> None:
    urls = [
        str(a.get("url")) for a in status.get("addresses") or [] if isinstance(a, Mapping) and a.get("url")
    ]
    if not urls:
        urls = [str(u) for u in (status.get("url"), (status.get("address") or {}).get("url")) if u]
    kept = sorted(set(urls))
    if any(not _valid_url(u) for u in kept):
        out.issue("EndpointInvalid")
    kept = [u for u in kept if _valid_url(u)]
    if len(kept) > MAX_ENDPOINTS:
        out.issue("EndpointsTruncated")
    out.endpoints = kept[:MAX_ENDPOINTS]


def _components(
    out: TrafficStatus, isvc: Mapping[str, Any], spec: Mapping[str, Any], status: Mapping[str, Any]
) -> None:
    components = status.get("components") or {}
    for key in components:
        if key not in COMPONENTS:
            out.issue("UnknownComponentStatus", str(key))
    for component in COMPONENTS:
        entry = components.get(component)
        if not isinstance(entry, Mapping):
            continue
        canary = entry.get("canary")
        if component == "engine" and not canary and status.get("canary"):
            canary = status.get("canary")
        steps = _canary_steps(isvc, component)
        record = None
        if isinstance(canary, Mapping) and canary:
            if steps is None or not steps or len(steps) > 20:
                out.issue("CanaryInvalid", component)
            else:
                step = canary.get("currentStep")
                weight = canary.get("observedTrafficWeight")
                if not isinstance(step, int) or not 0 <= step < len(steps) or not isinstance(weight, int):
                    out.issue("CanaryInvalid", component)
                else:
                    allowed = {steps[step].get("traffic", 0)} | (
                        {steps[step - 1].get("traffic", 0)} if step else {0}
                    )
                    if weight not in allowed:
                        out.issue("CanaryInvalid", component)
                    record = Canary(
                        component,
                        step + 1,
                        len(steps),
                        weight,
                        str(canary.get("stableRevisionHash") or ""),
                        str(canary.get("canaryRevisionHash") or ""),
                    )
                    out.canaries.append(record)
        _targets(out, isvc, component, entry, record)


def _targets(
    out: TrafficStatus,
    isvc: Mapping[str, Any],
    component: str,
    entry: Mapping[str, Any],
    canary: Canary | None,
) -> None:
    targets = [t for t in entry.get("traffic") or [] if isinstance(t, Mapping)]
    if not targets:
        return
    prefix = f"{out.name}-{component}-rev-"
    names = [str(t.get("revisionName") or "") for t in targets]
    if len(names) != len(set(names)):
        out.issue("AllocationConflict", component)
    percents = [t.get("percent") for t in targets]
    if (
        any(not n.startswith(prefix) for n in names)
        or any(not isinstance(p, int) or not 0 <= p <= 100 for p in percents)
        or sum(p for p in percents if isinstance(p, int)) != 100
    ):
        out.issue("AllocationInvalid", component)
    if len(targets) > MAX_TARGETS:
        out.issue("AllocationsTruncated", component)
    rolled = entry.get("latestRolledoutRevision")
    for target in sorted(targets, key=lambda t: str(t.get("revisionName")))[:MAX_TARGETS]:
        revision = str(target.get("revisionName") or "")
        short = revision.removeprefix(prefix)
        if canary is not None:
            passed = canary.step > canary.total
            role = (
                "canary"
                if short == canary.canary and not passed
                else "stable"
                if short in (canary.stable, canary.canary)
                else "other"
            )
        elif revision == rolled or (not rolled and len(targets) == 1 and target.get("latestRevision")):
            role = "stable"
        else:
            role = "other"
        out.targets.append((component, role, revision, int(target.get("percent") or 0)))
    # stable first, then canary, as the docs' example lists them
    out.targets.sort(key=lambda t: (COMPONENTS.index(t[0]), {"stable": 0, "canary": 1}.get(t[1], 2), t[2]))


def _state(out: TrafficStatus) -> str:
    codes = out.codes()
    if codes & INVALID_ISSUES:
        return "Invalid"
    if not out.has_traffic or out.ready_status is None:
        return "Unavailable"
    if out.fresh != "Current":
        return "Partial"
    if out.ready_status == "False":
        return "Degraded"
    partial = out.unsupported == "Present" or bool(codes & TRUNCATION_ISSUES)
    if out.ready_status == "Unknown":
        return "Partial" if partial else "Pending"
    return "Partial" if partial else "Reported"


# --- status: rendering ----------------------------------------------------------------------------


def _short(revision: str) -> str:
    return revision.rsplit("-rev-", 1)[-1]


def status_rows(report: TrafficStatus, wide: bool) -> list[tuple[str, str, str, str]]:
    f, rep = report.fresh, report.reported
    rows = [
        ("STATE", "-", report.state, "Computed/Unverifiable"),
        (
            "TRANSLATOR",
            "-",
            report.translator,
            f"Computed/{f}" if report.has_traffic else "Computed/Unavailable",
        ),
        ("ALGORITHM", "-", report.algorithm, rep),
        ("POLICY-READY", "-", report.ready, rep),
        ("UNSUPPORTED", "-", report.unsupported, rep),
    ]
    ends = "Reported/Unverifiable" if report.endpoints else "Unavailable/Unavailable"
    if wide:
        if report.policy:
            rows.append(("POLICY", "-", report.policy, rep))
        rows += [("ROUTE", "-", r, rep) for r in report.routes]
        rows += [("ENDPOINT", "-", e, ends) for e in report.endpoints]
    else:
        rows += [
            ("ROUTES", "-", str(len(report.routes)), rep),
            ("ENDPOINTS", "-", str(len(report.endpoints)), ends),
        ]
    rows += [
        ("CANARY", c.component, f"{c.step}/{c.total} @ {c.weight}%", "Reported/Unverifiable")
        for c in report.canaries
    ]
    if wide:
        rows += [
            ("TARGET", c, f"{role}:{rev}={pct}%", "Reported/Unverifiable")
            for c, role, rev, pct in report.targets
        ]
        rows += [("CONDITION", "-", cond, rep) for cond in report.conditions]
    else:
        rows += [
            ("WEIGHT", c, f"{role}:{_short(rev)}={pct}%", "Reported/Unverifiable")
            for c, role, rev, pct in report.targets
        ]
    rows += [("ISSUE", comp, code, "Computed/Unverifiable") for comp, code in report.issues]
    return rows


def status_document(report: TrafficStatus, now: datetime) -> Obj:
    f, rep = report.fresh, report.reported

    def val(value: Any, source: str) -> Obj:
        return {"value": value, "source": source}

    content: Obj = {
        "state": val(report.state, "Computed/Unverifiable"),
        "translator": val(report.translator, f"Computed/{f}"),
        "algorithm": val(report.algorithm, rep),
        "policyReady": val(report.ready, rep),
        "unsupported": val(report.unsupported, rep),
        "policy": val(report.policy, rep) if report.policy else None,
        "routes": [val(r, rep) for r in report.routes],
        "endpoints": [val(e, "Reported/Unverifiable") for e in report.endpoints],
        "canaries": [
            {
                "component": c.component,
                "step": c.step,
                "totalSteps": c.total,
                "weight": c.weight,
                "stableRevisionHash": c.stable,
                "canaryRevisionHash": c.canary,
                "source": "Reported/Unverifiable",
            }
            for c in report.canaries
        ],
        "targets": [
            {"component": c, "role": role, "revision": rev, "weight": pct, "source": "Reported/Unverifiable"}
            for c, role, rev, pct in report.targets
        ],
        "conditions": [val(c, rep) for c in report.conditions],
        "issues": [
            {"component": comp, "code": code, "invalid": code in INVALID_ISSUES}
            for comp, code in report.issues
        ],
    }
    return document(
        "TrafficStatusReport",
        {k: v for k, v in content.items() if v is not None},
        collectedAt=rfc3339(now),
        sources=[
            {
                "kind": "InferenceService",
                "namespace": report.namespace,
                "name": report.name,
                "uid": report.uid,
                "generation": report.generation,
            }
        ],
        warnings=report.warnings(),
    )
