"""`kubectl ome runtime explain`: OME's runtime selection for a model, one row per runtime (pure).

Columns and reasons as the v1.3 reference states them: RUNTIME SCOPE COMPATIBLE PRIORITY WEIGHT REASON;
`Yes` rows first in OME's ranking order (so the first is what OME would select), then `No` rows,
ServingRuntimes first, each group by name. The verdicts come from the same functions the controller and
the webhook use (`ome.resolution.runtimes`), so the CLI cannot disagree with them.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ome.resolution import runtimes

Obj = dict[str, Any]

HEADERS: Final = ("RUNTIME", "SCOPE", "COMPATIBLE", "PRIORITY", "WEIGHT", "REASON")
WIDTH: Final = 80
COLLECTION_LIMIT: Final = 1000
NO_AUTO_SELECT: Final = (
    "supports the model but has no supportedModelFormats[].autoSelect=true entry, so automatic selection "
    "skips it (pin it explicitly via spec.runtime.name instead)"
)
EXPLICIT_NOTE: Final = "Note: spec.runtime is explicit; automatic selection below is hypothetical."
NO_RUNTIMES: Final = "No serving runtimes found in the selected namespace or at cluster scope."


@dataclass(frozen=True, slots=True)
class Row:
    runtime: str
    scope: str
    compatible: bool
    priority: int | None
    weight: float | None
    reason: str
    rank: tuple[int, float, float, str] | None = None

    def cells(self) -> list[str]:
        return [self.runtime, self.scope, "Yes" if self.compatible else "No",
                "-" if self.priority is None else str(self.priority),
                "-" if self.weight is None else f"{self.weight:g}", self.reason or "-"]


def _entries(obj: Mapping[str, Any]) -> list[Obj]:
    spec = obj.get("spec") or {}
    return [e for e in spec.get("supportedModelFormats") or [] if isinstance(e, dict)]


def _first_matching(obj: Mapping[str, Any], model_spec: Mapping[str, Any]) -> Obj | None:
    for entry in _entries(obj):
        if not runtimes.entry_mismatches(entry, dict(model_spec)):
            return entry
    return None


def _priority(entry: Mapping[str, Any]) -> int:
    value = entry.get("priority")
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def _weight(entry: Mapping[str, Any]) -> float:
    total = 0.0
    for side in ("modelFormat", "modelFramework"):
        weight = (entry.get(side) or {}).get("weight", 1) if isinstance(entry.get(side), dict) else 0
        if isinstance(weight, int) and not isinstance(weight, bool) and weight > 0:
            total += weight
    return total * _priority(entry)


def row(kind: str, obj: Mapping[str, Any], model_obj: Mapping[str, Any], isvc: Mapping[str, Any]) -> Row:
    name = str((obj.get("metadata") or {}).get("name", ""))
    scope = "Namespaced" if kind == runtimes.SERVING_RUNTIME else "Cluster"
    reason = runtimes.incompatibility(obj, model_obj, isvc)
    if reason is not None:
        return Row(name, scope, False, None, None, reason)
    model_spec = model_obj.get("spec") or {}
    entries = _entries(obj)
    if not any(e.get("autoSelect") is True for e in entries):
        return Row(name, scope, False, None, None, NO_AUTO_SELECT)
    score = runtimes.score(obj, model_obj)
    matching = _first_matching(obj, model_spec)
    if score <= 0:
        if matching is not None and matching.get("autoSelect") is not True:
            label = runtimes.format_label(model_spec)
            return Row(name, scope, False, None, None,
                       f"matching format {label} is not autoSelect-enabled (a different "
                       "supportedModelFormats entry on this runtime has autoSelect=true, but not the one "
                       "that matches this model)")
        return Row(name, scope, False, None, None, "auto-select score is 0")
    entry = matching or {}
    distance = runtimes.size_distance(obj.get("spec") or {}, model_spec)
    rank = (0 if kind == runtimes.SERVING_RUNTIME else 1, -score, distance, name)
    return Row(name, scope, True, _priority(entry), _weight(entry), "", rank)


def explain(
    local: Sequence[Mapping[str, Any]], cluster: Sequence[Mapping[str, Any]], model_obj: Mapping[str, Any],
    isvc: Mapping[str, Any] | None = None,
) -> list[Row]:
    rows = [row(runtimes.SERVING_RUNTIME, o, model_obj, isvc or {}) for o in local]
    rows += [row(runtimes.CLUSTER_SERVING_RUNTIME, o, model_obj, isvc or {}) for o in cluster]
    yes = sorted((r for r in rows if r.compatible), key=lambda r: r.rank or ())
    no = sorted((r for r in rows if not r.compatible), key=lambda r: (r.scope != "Namespaced", r.runtime))
    return yes + no


def format_explain(rows: Sequence[Row], width: int = WIDTH) -> str:
    """The table, with REASON wrapped (inside words when it must) so lines fit `width` columns."""
    cells = [list(HEADERS)] + [r.cells() for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(HEADERS) - 1)]
    indent = sum(w + 3 for w in widths)
    room = max(width - indent, 10)
    out = []
    for line in cells:
        prefix = "".join(cell.ljust(widths[i] + 3) for i, cell in enumerate(line[:-1]))
        wrapped = textwrap.wrap(line[-1], room, break_long_words=True) or [""]
        out.append((prefix + wrapped[0]).rstrip())
        out.extend((" " * indent + more).rstrip() for more in wrapped[1:])
    return "\n".join(out) + "\n"
