"""Canary metric analysis (pure): query templates, judging one sample, and what a verdict does to a step.

A step with `analysis` samples its metrics every `interval`, from `initialDelay` after the step's new
Instances were ready (`stepEnteredTime`). For each metric the worst number of the query's result is
compared with `threshold` (the highest for LT/LTE, the lowest for GT/GTE). A sample is:

    Pass          every metric passed
    Fail          at least one metric breached its threshold
    Inconclusive  none breached and at least one could not be judged (no data, a query error, a
                  template error, a range vector, an unreadable token)

What a verdict does (`decide`):

    Pass          the step may advance once its `pause.duration` bake has passed
    Fail          analysisFailedChecks + 1; at failureLimit the canary rolls back (cause `analysis`)
    Inconclusive  onInconclusive Rollback: roll back; Hold / RollbackOnStall: hold the step
    (any pass)    no conclusive sample for longer than the ready timeout (from the last conclusive
                  sample, else from stepEnteredTime): Hold -> Failed, RollbackOnStall -> roll back
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final, Literal

from ome.config.durations import parse_duration
from ome.omenative.pods_view import format_time, parse_time

Verdict = Literal["pass", "fail", "inconclusive"]
Action = Literal["advance", "hold", "rollback", "fail"]

HOLD: Final = "Hold"
ROLLBACK: Final = "Rollback"
ROLLBACK_ON_STALL: Final = "RollbackOnStall"
NO_DATA: Final = "no data"
TEMPLATE_ERROR: Final = "template error: "
AUTH_METRIC: Final = "auth"
PROMETHEUS_METRIC: Final = "prometheus"

VARIABLES: Final = (
    "Namespace",
    "ISVCName",
    "Component",
    "CanaryRevision",
    "StableRevision",
    "CanaryService",
    "StableService",
)
# `{{.Name}}` with optional spaces, as Go's text/template writes a field of the data.
_ACTION: Final = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}")
_FIELD: Final = re.compile(r"^\.([A-Za-z_][A-Za-z0-9_]*)$")


class TemplateError(ValueError):
    pass


def render(query: str, variables: Mapping[str, str]) -> str:
    """Fill `{{.Var}}` references; anything else between braces, or an unknown name, is an error."""
    out: list[str] = []
    pos = 0
    for match in _ACTION.finditer(query):
        out.append(query[pos : match.start()])
        inner = _FIELD.match(match.group(1))
        if inner is None:
            raise TemplateError(f"unsupported template action {match.group(0)!r}")
        name = inner.group(1)
        if name not in variables:
            raise TemplateError(f"can't evaluate field {name}")
        out.append(variables[name])
        pos = match.end()
    rest = query[pos:]
    if "{{" in rest or "}}" in rest:
        raise TemplateError("unclosed action")
    out.append(rest)
    return "".join(out)


def variables(
    namespace: str, isvc: str, component: str, canary_hash: str, stable_hash: str
) -> dict[str, str]:
    """The template data: revision Services are `<isvc>-<component>-rev-<hash>`."""
    return {
        "Namespace": namespace,
        "ISVCName": isvc,
        "Component": component,
        "CanaryRevision": canary_hash,
        "StableRevision": stable_hash,
        "CanaryService": f"{isvc}-{component}-rev-{canary_hash}",
        "StableService": f"{isvc}-{component}-rev-{stable_hash}",
    }


# -- judging ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueryAnswer:
    """What the Prometheus client made of one instant query: numbers, or why there are none."""

    values: tuple[float, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class MetricResult:
    name: str
    passed: bool
    value: float | None = None
    threshold: str | None = None
    operator: str | None = None
    message: str | None = None

    @property
    def conclusive(self) -> bool:
        return self.passed or self.value is not None

    def as_status(self, at: datetime) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "passed": self.passed, "time": format_time(at)}
        if self.value is not None:
            out["value"] = format_value(self.value)
        if self.threshold is not None:
            out["threshold"] = self.threshold
        if self.operator is not None:
            out["operator"] = self.operator
        if self.message:
            out["message"] = self.message
        return out


def format_value(value: float) -> str:
    return repr(value) if not value.is_integer() else str(int(value)) if abs(value) < 1e15 else repr(value)


def worst(operator: str, values: Sequence[float]) -> float:
    return max(values) if operator in ("LT", "LTE") else min(values)


def compare(operator: str, value: float, threshold: float) -> bool:
    return {
        "LT": value < threshold,
        "LTE": value <= threshold,
        "GT": value > threshold,
        "GTE": value >= threshold,
    }[operator]


def judge_metric(metric: Mapping[str, Any], answer: QueryAnswer) -> MetricResult:
    name, operator, threshold = str(metric["name"]), str(metric["operator"]), str(metric["threshold"])
    if answer.error is not None:
        return MetricResult(name, False, None, threshold, operator, answer.error)
    numbers = [v for v in answer.values if not math.isnan(v)]
    if not numbers:
        return MetricResult(name, False, None, threshold, operator, NO_DATA)
    value = worst(operator, numbers)
    try:
        limit = float(threshold)
    except ValueError:
        return MetricResult(name, False, None, threshold, operator, f"threshold {threshold!r} is not numeric")
    return MetricResult(name, compare(operator, value, limit), value, threshold, operator)


def verdict(results: Sequence[MetricResult]) -> Verdict:
    if any(r.value is not None and not r.passed for r in results):
        return "fail"
    if results and all(r.passed for r in results):
        return "pass"
    return "inconclusive"


# -- scheduling and decisions ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Sample:
    """One judged sample of the current step."""

    at: datetime
    results: tuple[MetricResult, ...]

    @property
    def verdict(self) -> Verdict:
        return verdict(self.results)


def interval(analysis: Mapping[str, Any]) -> float:
    return parse_duration(str(analysis.get("interval") or "")) or 60.0


def initial_delay(analysis: Mapping[str, Any]) -> float:
    return parse_duration(str(analysis.get("initialDelay") or "")) or 0.0


def next_sample_at(analysis: Mapping[str, Any], canary: Mapping[str, Any]) -> datetime | None:
    """When the step's next sample is due: initialDelay after the step was ready, then every interval
    after the last judged sample of this step."""
    entered = parse_time(canary.get("stepEnteredTime"))
    if entered is None:
        return None
    first = entered + timedelta(seconds=initial_delay(analysis))
    last = parse_time(canary.get("lastEvaluationTime"))
    if last is None or last < entered:
        return first
    return max(first, last + timedelta(seconds=interval(analysis)))


@dataclass(slots=True)
class Decision:
    action: Action
    status: dict[str, Any] = field(default_factory=dict)
    """Canary status fields the sample changed (analysisFailedChecks, evaluation times, metricResults)."""
    evaluated: Verdict | None = None


def decide(
    analysis: Mapping[str, Any],
    canary: Mapping[str, Any],
    sample: Sample | None,
    now: datetime,
    ready_timeout: float | None,
    bake_done: bool,
) -> Decision:
    """What the analysis gate does this pass, given the step's status and an optional new sample."""
    out = Decision("hold")
    failed = int(canary.get("analysisFailedChecks") or 0)
    last_conclusive = parse_time(canary.get("lastConclusiveEvaluationTime"))
    entered = parse_time(canary.get("stepEnteredTime"))
    if last_conclusive is not None and entered is not None and last_conclusive < entered:
        last_conclusive = None  # a sample of an earlier step (or before the step lost Instances)
    if sample is not None:
        out.evaluated = sample.verdict
        out.status["lastEvaluationTime"] = format_time(sample.at)
        out.status["metricResults"] = [r.as_status(sample.at) for r in sample.results]
        if sample.verdict != "inconclusive":
            last_conclusive = sample.at
            out.status["lastConclusiveEvaluationTime"] = format_time(sample.at)
        if sample.verdict == "fail":
            failed += 1
            out.status["analysisFailedChecks"] = failed
            if failed >= int(analysis.get("failureLimit") or 1):
                out.action = "rollback"
                return out
        elif sample.verdict == "pass":
            out.action = "advance" if bake_done else "hold"
            return out
        elif analysis.get("onInconclusive") == ROLLBACK:
            out.action = "rollback"
            return out
    if ready_timeout is not None and ready_timeout > 0:
        since = last_conclusive or entered
        if since is not None and now - since > timedelta(seconds=ready_timeout):
            out.action = "rollback" if analysis.get("onInconclusive") == ROLLBACK_ON_STALL else "fail"
    return out
