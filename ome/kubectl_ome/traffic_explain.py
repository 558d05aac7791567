"""`traffic explain` (pure): the traffic behavior an InferenceService declares (spec.traffic, its
traffic annotations, its canary rollout groups) against the `traffic status` report of the same read.

SUMMARY is the first that applies of Invalid, NoIntent, Unsupported, Mismatch, Pending, Unavailable,
Partial, Consistent; the checks compare status with spec, never with requests.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from ome.kubectl_ome.output import document, rfc3339
from ome.kubectl_ome.rollout_report import groups_of
from ome.kubectl_ome.traffic_report import (
    ALGORITHMS,
    REALIZE_INVALID,
    SUPPORT_INVALID,
    TRUNCATION_ISSUES,
    TrafficStatus,
    build_status,
    status_document,
)
from ome.resolution import traffic_policy as tp

Obj = dict[str, Any]


@dataclass(slots=True)
class TrafficExplain:
    reported: TrafficStatus
    intent: str
    algorithm: str
    gateway_intent: bool
    canary_declared: bool
    support: str
    realize: str
    checks: list[tuple[str, str]]
    issues: list[str]
    summary: str
    summary_source: str
    extensions: list[tuple[str, int]]
    consistent_hash: str
    endpoint_override: str


_EXTENSIONS: Final = (
    ("CircuitBreaker", ("ome.io/circuit-breaker-",)),
    ("Retry", ("ome.io/retry-",)),
    ("Timeout", ("ome.io/timeout-",)),
    ("EnvoyPassthrough", (tp.BTP_PREFIX,)),
    ("IstioPassthrough", (tp.DR_PREFIX,)),
)


def build_explain(isvc: Mapping[str, Any], now: datetime) -> TrafficExplain:
    reported = build_status(isvc, now)
    spec = isvc.get("spec") or {}
    traffic = spec.get("traffic") or {}
    annotations = tp.intent_annotations(isvc)
    declared_alg = traffic.get("algorithm")
    gateway_intent = tp.has_intent(isvc)
    canary_declared = any(g.get("canary") is not None for g in groups_of(isvc))
    invalid = declared_alg is not None and declared_alg not in ALGORITHMS
    intent = "Invalid" if invalid else "Declared" if gateway_intent or canary_declared else "Absent"
    codes = reported.codes()
    f = reported.fresh
    # SUPPORT
    if not gateway_intent:
        support = "NotApplicable"
    elif intent == "Invalid" or codes & SUPPORT_INVALID:
        support = "Invalid"
    elif not reported.has_traffic:
        support = "Unavailable"
    elif reported.ready_status is None or f != "Current":
        support = "Partial"
    elif reported.ready_status == "True":
        support = "Honored" if reported.unsupported == "None" else "Partial"
    elif reported.ready_status == "Unknown":
        support = "Pending"
    else:
        support = "Rejected"
    # REALIZE
    if codes & REALIZE_INVALID:
        realize = "Invalid"
    elif not (reported.routes or reported.endpoints or reported.targets or reported.canaries):
        realize = "Unavailable"
    elif codes & TRUNCATION_ISSUES:
        realize = "Partial"
    else:
        realize = "Reported"
    # CHECKS
    checks: list[tuple[str, str]] = []
    if not gateway_intent:
        checks += [("algorithm", "NotApplicable"), ("policy", "NotApplicable")]
    elif intent == "Invalid":
        checks += [("algorithm", "Invalid"), ("policy", "Invalid")]
    else:
        want = str(declared_alg or "Default")
        if not reported.has_traffic or f not in ("Current",):
            checks.append(("algorithm", "Unverifiable"))
        else:
            checks.append(("algorithm", "Match" if reported.algorithm == want else "Mismatch"))
        if not reported.has_traffic or f != "Current" or reported.ready_status in (None, "Unknown"):
            checks.append(("policy", "Unverifiable"))
        elif reported.ready_status == "True" and reported.policy:
            checks.append(("policy", "Match"))
        else:
            checks.append(("policy", "Mismatch"))
    if not canary_declared:
        checks.append(("canary-weight", "NotApplicable"))
    elif "CanaryInvalid" in codes or any(c in codes for c in ("AllocationInvalid", "AllocationConflict")):
        checks.append(("canary-weight", "Invalid"))
    elif len(reported.canaries) == 1:
        checks.append(("canary-weight", "Match"))
    else:
        checks.append(("canary-weight", "Unverifiable"))
    # ISSUES, in the documented order
    issues: list[str] = []
    if invalid:
        issues.append("DeclaredSpecInvalid")
    if reported.state == "Invalid":
        issues.append("ReportedEvidenceInvalid")
    if f == "Stale":
        issues.append("ReportedEvidenceStale")
    if support == "Partial" and reported.unsupported == "Present" and f == "Current":
        issues.append("UnsupportedDeclaredFields")
    if reported.ready_status == "False":
        issues.append(
            "NoTranslatorAvailable" if reported.ready_reason == tp.NO_TRANSLATOR else "PolicyRejected"
        )
    if gateway_intent and not reported.has_traffic:
        issues.append("IntentNotReported")
    if (gateway_intent or canary_declared) and realize == "Unavailable":
        issues.append("RealizationUnavailable")
    if ("algorithm", "Mismatch") in checks:
        issues.append("AlgorithmMismatch")
    # SUMMARY
    states = {s for _, s in checks}
    if "Invalid" in (intent, support, realize) or "Invalid" in states:
        summary = "Invalid"
    elif intent == "Absent":
        summary = "NoIntent"
    elif reported.unsupported == "Present" or reported.ready_reason == tp.NO_TRANSLATOR:
        summary = "Unsupported"
    elif "Mismatch" in states or support == "Rejected":
        summary = "Mismatch"
    elif support == "Pending":
        summary = "Pending"
    elif gateway_intent and not reported.has_traffic:
        summary = "Unavailable"
    elif support == "Partial" or realize in ("Partial",) or "Unverifiable" in states or f != "Current":
        summary = "Partial"
    else:
        summary = "Consistent"
    summary_source = (
        "Computed/Unavailable" if realize == "Unavailable" or not reported.has_traffic else f"Computed/{f}"
    )
    extensions = []
    for label, prefixes in _EXTENSIONS:
        count = sum(1 for k in annotations if k.startswith(prefixes))
        if count:
            extensions.append((label, count))
    return TrafficExplain(
        reported,
        intent,
        str(declared_alg or "Default"),
        gateway_intent,
        canary_declared,
        support,
        realize,
        checks,
        issues,
        summary,
        summary_source,
        extensions,
        _input_summary(traffic.get("consistentHash")),
        _input_summary(traffic.get("endpointOverride")),
    )


def _input_summary(value: object) -> str:
    if not isinstance(value, Mapping) or not value:
        return "-"
    inputs = len(value.get("headers") or []) + (1 if value.get("cookie") else 0)
    return f"{value.get('type')} inputs={inputs}"


def _counts(r: TrafficStatus) -> tuple[int, int, int]:
    return len(r.routes), len(r.endpoints), len(r.targets)


def explain_rows(e: TrafficExplain) -> list[tuple[str, str, str, str]]:
    r = e.reported
    f = r.fresh
    routes, ends, weights = _counts(r)
    realize_source = "Unavailable/Unavailable" if e.realize == "Unavailable" else r.reported
    rows = [
        ("SUMMARY", e.summary, "-", e.summary_source),
        ("INTENT", e.intent, e.algorithm if e.intent != "Absent" else "-", "Declared/Current"),
        ("SUPPORT", e.support, "-", f"Computed/{f}" if r.has_traffic else "Computed/Unavailable"),
        ("TRANSLATE", "Computed", r.translator, f"Computed/{f}" if r.has_traffic else "Computed/Unavailable"),
        ("REALIZE", e.realize, f"r={routes} e={ends} w={weights}", realize_source),
    ]
    if len(r.canaries) > 1:
        rows += [
            ("CANARY", c.component, f"{c.step}/{c.total} @ {c.weight}%", "Reported/Unverifiable")
            for c in r.canaries
        ]
    check_source = f"Computed/{f}" if r.has_traffic else "Computed/Unavailable"
    rows += [("CHECK", state, name, check_source) for name, state in e.checks]
    rows += [("ISSUE", "-", code, "Computed/Unverifiable") for code in e.issues]
    return rows


def explain_wide_rows(e: TrafficExplain, now: datetime) -> list[tuple[str, str, str, str, str]]:
    r = e.reported
    f, rep = r.fresh, r.reported
    at = rfc3339(now)
    routes, ends, weights = _counts(r)
    check_source = f"Computed/{f}" if r.has_traffic else "Computed/Unavailable"
    rows: list[tuple[str, str, str, str, str]] = [
        ("REPORT", "api-version", "-", "cli.ome.io/v1alpha1", "-"),
        ("REPORT", "kind", "-", "TrafficExplainReport", "-"),
        ("SUBJECT", "namespace", "-", r.namespace, "-"),
        ("SUBJECT", "name", "-", r.name, "-"),
        ("REPORT", "collected-at", "-", at, "-"),
        ("SOURCE", "InferenceService", "Reported", f"{r.namespace}/{r.name} gen={r.generation} at={at}", rep),
        ("SUMMARY", "state", e.summary, "-", e.summary_source),
        ("SUMMARY", "intent", e.intent, "-", "Declared/Current"),
        ("SUMMARY", "support", e.support, "-", check_source),
        (
            "SUMMARY",
            "realization",
            e.realize,
            f"routes={routes} endpoints={ends} targets={weights}",
            "Unavailable/Unavailable" if e.realize == "Unavailable" else rep,
        ),
        (
            "INTENT",
            "algorithm",
            "Declared" if e.gateway_intent or e.intent == "Invalid" else "Absent",
            e.algorithm,
            "Declared/Current",
        ),
        (
            "INTENT",
            "consistent-hash",
            "Declared" if e.consistent_hash != "-" else "Absent",
            e.consistent_hash,
            "Declared/Current",
        ),
        (
            "INTENT",
            "endpoint-override",
            "Declared" if e.endpoint_override != "-" else "Absent",
            e.endpoint_override,
            "Declared/Current",
        ),
    ]
    rows += [
        ("EXTENSION", label, "Declared", str(count), "Declared/Current") for label, count in e.extensions
    ]
    rows += [
        ("REPORTED", "algorithm", "Reported" if r.has_traffic else "Unavailable", r.algorithm, rep),
        ("REPORTED", "translator", "Computed", r.translator, check_source),
        ("REPORTED", "policy-ready", r.ready.split("/")[0], r.ready.split("/", 1)[1], rep),
        ("REPORTED", "unsupported", r.unsupported, "-", rep),
    ]
    if r.policy:
        rows.append(("REPORTED", "policy", "Reported", r.policy, rep))
    rows += [("REPORTED", "route", "Reported", route, rep) for route in r.routes]
    rows += [("OBSERVED", "endpoint", "Reported", e_, "Reported/Unverifiable") for e_ in r.endpoints]
    many = len(r.canaries) > 1
    for c in r.canaries:
        rows.append(
            (
                "OBSERVED",
                "canary",
                "Reported",
                f"{c.component} step={c.step}/{c.total} traffic={c.weight}%",
                "Reported/Unverifiable",
            )
        )
        prefix = f"{c.component}/" if many else ""
        rows.append(
            ("OBSERVED", f"{prefix}stable-revision", "Reported", c.stable or "-", "Reported/Unverifiable")
        )
        rows.append(
            ("OBSERVED", f"{prefix}canary-revision", "Reported", c.canary or "-", "Reported/Unverifiable")
        )
    rows += [
        ("OBSERVED", "target", "Reported", f"{c}/{role}/{rev}={pct}%", "Reported/Unverifiable")
        for c, role, rev, pct in r.targets
    ]
    rows += [("REPORTED", "condition", "Reported", cond, rep) for cond in r.conditions]
    rows += [("REPORTED-ISSUE", comp, "Reported", code, "Computed/Unverifiable") for comp, code in r.issues]
    rows += [("CHECK", name, state, "-", check_source) for name, state in e.checks]
    rows += [("ISSUE", "-", "-", code, "Computed/Unverifiable") for code in e.issues]
    rows += [("WARNING", "-", "-", w, "-") for w in explain_warnings(e)]
    return rows


def explain_warnings(e: TrafficExplain) -> list[str]:
    out = list(e.reported.warnings())
    if e.gateway_intent and not e.reported.has_traffic:
        out.append("SourceUnavailable")
    if e.summary in ("Partial", "Unsupported") and "PartialData" not in out:
        out.append("PartialData")
    return out


def explain_document(e: TrafficExplain, now: datetime) -> Obj:
    r = e.reported
    status_doc = status_document(r, now)
    content = {
        "summary": {"state": e.summary, "intent": e.intent, "support": e.support, "realization": e.realize},
        "intent": {
            "state": e.intent,
            "algorithm": e.algorithm,
            "consistentHash": e.consistent_hash,
            "endpointOverride": e.endpoint_override,
            "extensions": [{"kind": k, "count": n} for k, n in e.extensions],
        },
        "reported": status_doc["content"],
        "comparisons": [{"check": name, "result": state} for name, state in e.checks],
        "issues": list(e.issues),
    }
    return document(
        "TrafficExplainReport",
        content,
        collectedAt=rfc3339(now),
        sources=[
            {"kind": "InferenceService", "namespace": r.namespace, "name": r.name, "generation": r.generation}
        ],
        warnings=explain_warnings(e),
    )
