"""`kubectl ome rollout history` and `rollout validate` (pure), from an InferenceService object.

history: the records the status keeps (the active run, the last closed run, where each group's plan
came from, the current revisions), one row each. validate: one row per check, OVERALL first; it is
`Invalid` when any check is, else `Unverifiable` when any is, else `Valid`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from ome.kubectl_ome.rollout_report import (
    active_run,
    declared_components,
    declared_source,
    groups_of,
    strategy,
    summarize,
)
from ome.kubectl_ome.table import format_table, shorten_end
from ome.resolution.modes import COMPONENTS

Obj = dict[str, Any]

HISTORY_HEADERS: Final = ("TYPE", "STATE", "COMP", "IDENT", "TIME", "DETAIL", "ISS")
VALIDATE_HEADERS: Final = ("CHECK", "COMP", "RESULT", "SOURCE")
_DNS_SUBDOMAIN: Final = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_SHORT_PHASES: Final = {
    "BlueGreenStandby": "BGStandby",
    "RollingBack": "RollingBk",
    "ScalingDown": "ScaleDown",
    "AwaitingNextComponent": "AwaitNext",
}
_PROGRESSIONS: Final = ("canary", "blueGreen", "rollingUpdate")
_CLASSES: Final = ("HPA", "KEDA", "External", "None")


def _time(value: Any) -> str:
    """`MM-DDTHH:MM` in UTC from an RFC 3339 time, or `-`."""
    text = str(value or "")
    return text[5:16] if len(text) >= 16 else "-"


def _short(value: str, width: int = 10) -> str:
    return value if len(value) <= width else value[: width - 3] + "..."


def _digest(value: Any) -> str:
    text = str(value or "")
    return text.split(":", 1)[-1][:12] if text else "-"


def history_rows(isvc: Mapping[str, Any]) -> list[list[str]]:
    status = isvc.get("status") or {}
    rollout = status.get("rollout") or {}
    summary = summarize(isvc)
    records: list[list[str]] = []
    run = active_run(isvc)
    if run:
        targets = run.get("targetRevisions") or []
        groups = (run.get("plan") or {}).get("groups") or []
        run_id = str(run.get("runID") or "")
        records.append(
            [
                "ACTIVE",
                "Active",
                "-",
                run_id[-12:] or "-",
                _time(run.get("openedAt")),
                f"G:{len(groups)} T:{len(targets)}",
            ]
        )
        for target in targets:
            records.append(
                [
                    "TARGET",
                    "Reported",
                    str(target.get("component")),
                    _short(str(target.get("revision") or "-"), 12),
                    "-",
                    "run-target",
                ]
            )
    last = rollout.get("lastRun")
    if last:
        records.append(
            [
                "LAST",
                str(last.get("outcome")),
                "-",
                "-",
                _time(last.get("closedAt")),
                f"G:{len(last.get('groups') or [])}",
            ]
        )
    if run:
        for i, group in enumerate((run.get("plan") or {}).get("groups") or []):
            records.append(
                [
                    "PROV-A",
                    str(group.get("source")),
                    f"g{i}",
                    _digest(group.get("portableDigest")),
                    _time(run.get("pinnedAt")),
                    _policy(group),
                ]
            )
    if last:
        for i, group in enumerate(last.get("groups") or []):
            records.append(
                [
                    "PROV-L",
                    str(group.get("source")),
                    f"g{i}",
                    _digest(group.get("portableDigest")),
                    _time(last.get("closedAt")),
                    _policy(group),
                ]
            )
    for group in rollout.get("groups") or []:
        records.append(
            [
                "PROV-C",
                str(group.get("source")),
                f"g{group.get('index')}",
                _digest(group.get("observedDigest")),
                "-",
                _policy(group),
            ]
        )
    components = status.get("components") or {}
    for comp in COMPONENTS:
        entry = components.get(comp) or {}
        phase = _SHORT_PHASES.get(str(entry.get("rolloutPhase")), str(entry.get("rolloutPhase") or "Unknown"))
        for key, role in (
            ("latestRolledoutRevision", "Current"),
            ("latestReadyRevision", "Ready"),
            ("previousRolledoutRevision", "Previous"),
        ):
            if entry.get(key):
                records.append(["REV", phase, comp, _short(str(entry[key]), 12), "-", role])
    issues = len(summary.issues) + sum(len(c.issues) for c in summary.components)
    window = "Partial" if records else ("Empty" if status.get("rollout") is not None else "Unavailable")
    head = [
        ["WINDOW", window, "-", "-", "-", "bounded"],
        [
            "CURR",
            _short(summary.state),
            "-",
            summary.evidence,
            "-",
            "Unverified" if summary.epoch == "Unverifiable" else "N/A",
        ],
    ]
    return [[*row, str(issues)] for row in head + records]


def _policy(group: Mapping[str, Any]) -> str:
    ref = group.get("policyRef") or {}
    name = ref.get("name") or (group.get("shadowedPolicyRef") or {}).get("name")
    if not name:
        return "-"
    name = str(name)
    return name if len(name) <= 10 else f"{name[0]}#{abs(hash(name)) % 10**8:08d}"


def format_history(isvc: Mapping[str, Any]) -> str:
    return format_table(HISTORY_HEADERS, history_rows(isvc))


# --- validate -----------------------------------------------------------------------------------


def _check(name: str, result: str, comp: str = "-", issues: list[str] | None = None) -> Obj:
    freshness = (
        "NotApplicable"
        if result == "NotApplicable"
        else ("Unverifiable" if result == "Unverifiable" else "Current")
    )
    return {
        "check": name,
        "component": comp,
        "result": result,
        "evidence": "Computed",
        "freshness": freshness,
        "issues": issues or [],
    }


def validate_checks(isvc: Mapping[str, Any]) -> list[Obj]:
    spec = isvc.get("spec") or {}
    meta = isvc.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    groups = groups_of(isvc)
    checks: list[Obj] = []
    ref_issues = []
    for group in groups:
        ref = group.get("policyRef")
        if ref and (
            ref.get("kind") not in (None, "", "RolloutPolicy")
            or not _DNS_SUBDOMAIN.match(str(ref.get("name") or ""))
            or ref.get("progression") not in _PROGRESSIONS
        ):
            ref_issues.append("InvalidPolicyRef")
    checks.append(_check("ROLLOUT-REFS", "Invalid" if ref_issues else "Valid", issues=ref_issues))
    plan_issues = []
    if len(groups) > 3:
        plan_issues.append("TooManyGroups")
    seen: set[str] = set()
    for group in groups:
        comps = list(group.get("components") or [])
        if not 1 <= len(comps) <= 3 or seen & set(comps):
            plan_issues.append("GroupComponentsInvalid")
        seen |= set(comps)
        if sum(group.get(k) is not None for k in _PROGRESSIONS) > 1:
            plan_issues.append("MultipleProgressions")
        steps = (group.get("canary") or {}).get("steps") or []
        if len(steps) > 20:
            plan_issues.append("TooManySteps")
        for step in steps:
            if not 0 <= int(step.get("traffic", 0)) <= 100:
                plan_issues.append("StepTrafficInvalid")
    checks.append(_check("ROLLOUT-PLAN", "Invalid" if plan_issues else "Valid", issues=plan_issues))
    ordering = (spec.get("rollout") or {}).get("groupOrdering")
    order_ok = all(g.get("order") is None for g in groups) and (
        len(groups) <= 1
        or ordering == "Concurrent"
        or all(strategy(g) == "BlueGreen" and len(g.get("components") or []) == 1 for g in groups)
    )
    checks.append(_check("ROLLOUT-ORDER", "Valid" if order_ok else "Invalid"))
    resolve = "Unverifiable" if groups or active_run(isvc) else "NotApplicable"
    checks.append(_check("ROLLOUT-RESOLVE", resolve))
    checks.append(_check("TRAFFIC-SPEC", "Valid"))
    traffic = spec.get("traffic")
    checks.append(_check("TRAFFIC-READY", "NotApplicable" if not traffic else _traffic_ready(isvc)))
    scaling = spec.get("scalingPolicy") or {}
    scaling_ok = scaling.get("mode") in (None, "Independent", "Coordinated", "Proportional")
    checks.append(_check("SCALING-POLICY", "Valid" if scaling_ok else "Invalid"))
    service_ok = annotations.get("ome.io/autoscalerClass") in (
        None,
        "hpa",
        "keda",
        "external",
        "none",
        "HPA",
        "KEDA",
        "External",
        "None",
    )
    target = annotations.get("ome.io/targetUtilizationPercentage")
    if target is not None and not (str(target).isdigit() and 1 <= int(target) <= 100):
        service_ok = False
    checks.append(_check("AUTOSCALER-SPEC", "Valid" if service_ok else "Invalid"))
    for comp in declared_components(isvc):
        body = spec.get(comp) or {}
        low, high = body.get("minReplicas"), body.get("maxReplicas")
        ok = not (isinstance(low, int) and isinstance(high, int) and high and low > high)
        autoscaler = body.get("autoscaler") or {}
        if autoscaler.get("class") not in (None, *_CLASSES):
            ok = False
        checks.append(_check("AUTOSCALER-SPEC", "Valid" if ok else "Invalid", comp))
        if body.get("autoscalerPolicyRef"):
            checks.append(_check("AUTOSCALER-RESOLVE", "Unverifiable", comp))
    return checks


def _traffic_ready(isvc: Mapping[str, Any]) -> str:
    conditions = ((isvc.get("status") or {}).get("traffic") or {}).get("conditions") or []
    ready = [c for c in conditions if c.get("type") == "BackendPolicyReady"]
    if len(ready) == 1 and ready[0].get("status") == "True":
        return "Valid"
    return "Unverifiable"


def overall(checks: list[Obj]) -> str:
    results = {c["result"] for c in checks}
    if "Invalid" in results:
        return "Invalid"
    return "Unverifiable" if "Unverifiable" in results else "Valid"


def validate_rows(checks: list[Obj], wide: bool = False) -> list[list[str]]:
    state = overall(checks)
    rows = [
        {
            "check": "OVERALL",
            "component": "-",
            "result": state,
            "evidence": "Computed",
            "freshness": "Current",
            "issues": [],
        },
        *checks,
    ]
    if wide:
        return [
            [
                r["check"],
                r["component"],
                r["result"],
                r["evidence"],
                r["freshness"],
                ",".join(r["issues"]) or "-",
            ]
            for r in rows
        ]
    return [[r["check"], r["component"], r["result"], f"{r['evidence']}/{r['freshness']}"] for r in rows]


def format_validate(checks: list[Obj], wide: bool = False) -> str:
    headers = (*VALIDATE_HEADERS[:3], "EVIDENCE", "FRESHNESS", "ISSUES") if wide else VALIDATE_HEADERS
    return format_table(headers, validate_rows(checks, wide))


def shorten(value: str, width: int) -> str:
    return shorten_end(value, width)


def declared(group: Mapping[str, Any]) -> str:
    return declared_source(group)
