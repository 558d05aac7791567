"""`kubectl ome instance list`: the Instances of an InferenceService's OMENative components (pure).

Each component's InferenceReplica reports one row per Instance, in `status.instanceStatuses` or in
ColumnarV2 `status.instanceStatusColumns`. A row becomes one table line; the component gets an
EVIDENCE value that says how far the rows can be trusted (kubectl-ome reference, "instance list").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ome.kubectl_ome.table import format_table, shorten_middle
from ome.omenative.status import rows_of
from ome.resolution.modes import COMPONENTS

Obj = dict[str, Any]

HEADERS: Final = ("COMP", "IDX/INC", "PHASE", "PODS", "REVS", "AOF", "EVIDENCE")
PHASES: Final = frozenset(
    {"Pending", "Creating", "Ready", "Updating", "Restarting", "Migrating", "Failed", "Deleting"}
)
REVS_WIDTH: Final = 11
MAX_ROWS: Final = 500
"""Table lines at most; a component whose rows do not fit shows ROWS-LIMIT."""
_DNS_SUBDOMAIN: Final = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")

# Whole-collection problems (the `summary` row).
SOURCE_UNAVAILABLE: Final = "SOURCE-UNAVL"
REJECTED: Final = "REJECTED"
TRUNCATED: Final = "TRUNCATED"


@dataclass(frozen=True, slots=True)
class ReplicaRead:
    """One InferenceReplica the CLI read for a component, or why it has none to show."""

    component: str
    name: str
    replica: Mapping[str, Any] | None
    duplicate: bool = False
    """A second InferenceReplica claiming the component for the same InferenceService."""
    projected: bool = False
    """Projected by the InferenceService (named `<isvc>-<component>`), not one spec.replicaRefs names."""


@dataclass(slots=True)
class ComponentReport:
    component: str
    replica: str
    evidence: str
    encoding: str
    rows: list[Obj] = field(default_factory=list)
    issues: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class InstanceLine:
    component: str
    idx_inc: str
    phase: str
    pods: str
    revs: str
    aof: str
    evidence: str

    def cells(self) -> tuple[str, ...]:
        return (self.component, self.idx_inc, self.phase, self.pods, self.revs, self.aof, self.evidence)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def encoding_of(status: Mapping[str, Any]) -> str:
    return "ColumnarV2" if status.get("instanceStatusEncoding") == "ColumnarV2" else "DenseV1"


def row_problems(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Invalid values in the rows, as the BAD:<problem> codes name them."""
    problems: list[str] = []
    seen: set[int] = set()
    for row in rows:
        index, inc = _int(row.get("index")), row.get("incarnation", 0)
        if index is None or index < 0 or _int(inc) is None or inc < 0:
            problems.append("INSTANCE")
        elif index in seen:
            problems.append("DUP-IDX")
        else:
            seen.add(index)
        if row.get("phase") not in PHASES:
            problems.append("PHASE")
        for key in ("runningRevision", "targetRevision"):
            value = row.get(key)
            if value is not None and (not isinstance(value, str) or not _DNS_SUBDOMAIN.match(value)):
                problems.append("REVISION")
        counts = [row.get(k, 0) for k in ("podCount", "servingPodCount", "availablePodCount")]
        ints = [_int(c) for c in counts]
        total, serving, available = (c if c is not None else -1 for c in ints)
        if min(total, serving, available) < 0 or max(serving, available) > total:
            problems.append("COUNTS")
    return list(dict.fromkeys(problems))


def status_problems(status: Mapping[str, Any]) -> list[str]:
    """Replica counts that contradict each other."""
    counts = {
        k: status.get(k, 0) for k in ("replicas", "readyReplicas", "servingReplicas", "availableReplicas")
    }
    if any(_int(v) is None or v < 0 for v in counts.values()):
        return ["COUNTS"]
    if any(counts[k] > counts["replicas"] for k in ("readyReplicas", "servingReplicas", "availableReplicas")):
        return ["COUNTS"]
    return []


PARENT_GENERATION: Final = "ome.io/parent-generation"


def parent_problem(replica: Mapping[str, Any], parent_generation: int | None) -> str | None:
    """How the InferenceReplica's `ome.io/parent-generation` stamp compares with the service's generation:
    None (current or not checkable), "PARENT" (invalid or ahead), "STALE" or "UNAVL" (missing)."""
    if parent_generation is None:
        return None
    stamp = ((replica.get("metadata") or {}).get("annotations") or {}).get(PARENT_GENERATION)
    if stamp is None:
        return "UNAVL"
    if not str(stamp).isdigit() or int(stamp) > parent_generation:
        return "PARENT"
    return "STALE" if int(stamp) < parent_generation else None


def component_report(read: ReplicaRead, parent_generation: int | None = None) -> ComponentReport:
    """The rows of one InferenceReplica and its EVIDENCE value; with the InferenceService's generation,
    a replica projected from an older one is STALE:PARENT, one without the stamp PARENT-UNAVL."""
    replica = read.replica or {}
    status = replica.get("status") or {}
    report = ComponentReport(read.component, read.name, "UNAVAILABLE", encoding_of(status))
    if read.duplicate:
        report.evidence, report.issues = "BAD:DUP-COMP", ["DUP-COMP"]
        return report
    if read.replica is None:
        report.issues = ["NotFound"]
        return report
    generation = _int((replica.get("metadata") or {}).get("generation"))
    observed = status.get("observedGeneration")
    if not status or observed is None:
        report.evidence, report.issues = "NOT-OBSERVED", ["NotObserved"]
        return report
    try:
        report.rows = rows_of(status)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        report.evidence, report.issues = "BAD", [f"Undecodable: {exc}"]
        return report
    problems = []
    if _int(observed) is None or observed < 0 or generation is None or observed > generation:
        problems.append("GEN")
    parent = parent_problem(replica, parent_generation) if read.projected else None
    if parent == "PARENT":
        problems.append("PARENT")
    problems += row_problems(report.rows) + status_problems(status)
    problems = list(dict.fromkeys(problems))
    report.issues = list(problems)
    indexes = sorted(i for i in (_int(r.get("index")) for r in report.rows) if i is not None)
    if problems:
        report.evidence = "BAD:" + problems[0]
    elif generation is not None and observed < generation:
        report.evidence = f"STALE:{observed}/{generation}"
        report.issues.append("Stale")
    elif parent == "STALE":
        report.evidence = "STALE:PARENT"
        report.issues.append("ParentStale")
    elif parent == "UNAVL":
        report.evidence = "PARENT-UNAVL"
        report.issues.append("ParentGenerationUnavailable")
    elif not report.rows:
        report.evidence = "NOT-REPORTED" if (_int(status.get("replicas")) or 0) > 0 else "EMPTY"
    elif indexes != list(range(len(indexes))):
        report.evidence = "SPARSE"
    else:
        report.evidence = "OK"
    report.rows.sort(key=lambda r: (_int(r.get("index")) is None, _int(r.get("index")) or 0))
    return report


def revs(row: Mapping[str, Any]) -> str:
    """`running>target`, `>target` before any revision runs, or the running revision alone."""
    running, target = row.get("runningRevision") or "", row.get("targetRevision") or ""
    if running and target and running != target:
        value = f"{running}>{target}"
    elif target and not running:
        value = f">{target}"
    else:
        value = running or "-"
    return shorten_middle(str(value), REVS_WIDTH)


def aof(row: Mapping[str, Any]) -> str:
    return "".join(
        (
            "A" if row.get("admitted") is True else "-",
            "O" if row.get("operation") else "-",
            "F" if row.get("lastFailure") else "-",
        )
    )


def instance_line(component: str, row: Mapping[str, Any], evidence: str) -> InstanceLine:
    counts = (row.get("servingPodCount", 0), row.get("availablePodCount", 0), row.get("podCount", 0))
    return InstanceLine(
        component=component,
        idx_inc=f"{row.get('index', '-')}/{row.get('incarnation', 0)}",
        phase=str(row.get("phase") or "-"),
        pods="/".join(str(c) for c in counts),
        revs=revs(row),
        aof=aof(row),
        evidence=evidence,
    )


def dash_line(component: str, evidence: str) -> InstanceLine:
    return InstanceLine(component, "-", "-", "-", "-", "-", evidence)


def component_order(reads: Iterable[ReplicaRead]) -> list[ReplicaRead]:
    """Engine first, then decoder and router; the canonical replica before the others."""
    rank = {c: i for i, c in enumerate(COMPONENTS)}
    return sorted(reads, key=lambda r: (rank.get(r.component, len(rank)), r.duplicate))


def instance_lines(
    reports: Sequence[ComponentReport], summary: Sequence[str] = (), max_rows: int = MAX_ROWS
) -> list[InstanceLine]:
    """Table lines for every component, plus the `summary` line for whole-collection problems."""
    lines: list[InstanceLine] = []
    problems = list(summary)
    for report in reports:
        budget = max_rows - len(lines)
        if len(report.rows) > budget or budget <= 0:
            lines.append(dash_line(report.component, "ROWS-LIMIT"))
            problems.append(TRUNCATED)
            continue
        if not report.rows:
            lines.append(dash_line(report.component, report.evidence))
        lines.extend(instance_line(report.component, row, report.evidence) for row in report.rows)
    problems = list(dict.fromkeys(problems))
    if not lines:
        lines.append(dash_line("-", ",".join(problems) or overall_state(reports, problems)))
    elif problems:
        lines.append(dash_line("summary", ",".join(problems)))
    return lines


def overall_state(reports: Sequence[ComponentReport], summary: Sequence[str]) -> str:
    if SOURCE_UNAVAILABLE in summary and not reports:
        return "UNAVAILABLE"
    if summary or any(r.evidence not in ("OK", "SPARSE", "EMPTY") for r in reports):
        return "PARTIAL"
    return "OK"


def format_instances(lines: Sequence[InstanceLine]) -> str:
    """The `instance list` table."""
    return format_table(HEADERS, [line.cells() for line in lines])


def report_document(
    name: str, namespace: str, reports: Sequence[ComponentReport], summary: Sequence[str]
) -> Obj:
    """The `-o json|yaml` InstanceListReport: every value in full, with every issue."""
    return {
        "apiVersion": "cli.ome.io/v1alpha1",
        "kind": "InstanceListReport",
        "metadata": {"name": name, "namespace": namespace},
        "content": {
            "state": overall_state(reports, summary),
            "summary": list(summary),
            "components": [
                {
                    "component": r.component,
                    "inferenceReplica": r.replica,
                    "encoding": r.encoding,
                    "evidence": r.evidence,
                    "issues": r.issues,
                    "instances": r.rows,
                }
                for r in reports
            ],
        },
    }
