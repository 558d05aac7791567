"""`ome.io/reset-instances` on an InferenceReplica (pure): which Failed Instances to rebuild.

The value is `all`, an index, or a comma-separated list of indexes (case-sensitive). Each named Instance
is reset when it is `Failed`, holds no Update/Migrate/Delete operation, and none of its pods serves:
its pods are deleted and its preserved operation cleared, so the InferenceReplica planner rebuilds it
from its revision. Every request is answered once with one event per outcome and the annotation is
removed, even when nothing was reset (reset-failed-instances.md): InstancesReset for those reset,
InstancesResetSkipped with each skipped index's reason (or `none is Failed; nothing to reset` for `all`),
InstancesResetRejected, quoting the value, for anything but `all` or indexes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ome.omenative.pods_view import PodView

ANNOTATION: Final = "ome.io/reset-instances"
OWNING_OPERATIONS: Final = ("Update", "Migrate", "Delete")
Row = dict[str, Any]
Event = tuple[str, str, str]


@dataclass(slots=True)
class Plan:
    rows: dict[int, Row] = field(default_factory=dict)
    deletes: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


def plan(subject: str, component: str, value: str, rows: Sequence[Row], pods: Sequence[PodView]) -> Plan:
    """subject is `InferenceReplica <ns>/<name>`, as the messages print it."""
    out = Plan()
    prefix = f"{subject} component={component}:"
    by_index = {int(r["index"]): r for r in rows}
    pods_of: dict[int, list[PodView]] = {}
    for pod in pods:
        pods_of.setdefault(pod.index, []).append(pod)
    everything = value == "all"
    if everything:
        wanted = sorted(i for i, r in by_index.items() if r.get("phase") == "Failed")
        if not wanted:
            out.events.append(
                ("Normal", "InstancesResetSkipped", f"{prefix} none is Failed; nothing to reset")
            )
            return out
    else:
        wanted = []
        for part in value.split(","):
            text = part.strip()
            if not text.isdigit() or not text.isascii():
                out.events.append((
                    "Warning", "InstancesResetRejected",
                    f'{prefix} {ANNOTATION}="{value}" rejected: "{text}" is not a non-negative instance '
                    "index; nothing reset",
                ))
                return out
            if int(text) not in wanted:
                wanted.append(int(text))
    reset: list[int] = []
    skipped: list[tuple[int, str]] = []
    for index in wanted:
        why = _skip_reason(by_index.get(index), pods_of.get(index, []))
        if why is not None:
            skipped.append((index, why))
            continue
        row = by_index[index]
        out.rows[index] = {k: v for k, v in row.items() if k != "operation"}
        out.deletes += sorted(p.name for p in pods_of.get(index, []) if not p.terminating)
        reset.append(index)
    if reset:
        out.events.append((
            "Normal", "InstancesReset",
            f"{prefix} reset instance(s) {','.join(map(str, reset))} at operator request ({ANNOTATION} "
            "annotation): pods deleted and preserved operation cleared; the lifecycle passes rebuild them",
        ))
    if skipped:
        listed = ", ".join(f"{i} ({why})" for i, why in skipped)
        out.events.append(
            ("Normal", "InstancesResetSkipped", f"{prefix} reset skipped for instance(s) {listed}")
        )
    return out


def _skip_reason(row: Mapping[str, Any] | None, pods: list[PodView]) -> str | None:
    if row is None:
        return "no such instance"
    op_type = (row.get("operation") or {}).get("type")
    if op_type in OWNING_OPERATIONS:
        return f"owned by {op_type}"
    if row.get("phase") != "Failed":
        return f"Phase={row.get('phase')}"
    if any(p.serving for p in pods):
        return "still serving"
    if not row.get("operation") and all(p.terminating for p in pods):
        return "nothing to reset"
    return None
