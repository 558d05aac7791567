"""ColumnarV2: per-Instance rows stored as value -> index-set groups (pure).

A value shared by many Instances is stored once against the canonical index set ("0-8,10,12-14") of
the Instances carrying it; per-Instance records (conditions, readySince, operation, lastFailure,
announced) stay keyed by index in `entries`. Zero counts, incarnation 0 and empty revisions are the
absent defaults and are never grouped, so `decode(encode(rows)) == rows` for rows that omit them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

Row = dict[str, Any]

_GROUPED: Final = (
    ("phase", "phases", True),
    ("runningRevision", "runningRevisions", False),
    ("targetRevision", "targetRevisions", False),
    ("incarnation", "incarnations", False),
    ("podCount", "podCounts", False),
    ("servingPodCount", "servingPodCounts", False),
    ("availablePodCount", "availablePodCounts", False),
)
_ENTRY_FIELDS: Final = ("conditions", "readySince", "operation", "lastFailure", "announced")


def format_index_set(indices: Iterable[int]) -> str:
    """Canonical form: ascending, disjoint, adjacent terms merged."""
    runs: list[list[int]] = []
    for i in sorted(set(indices)):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def parse_index_set(value: str) -> list[int]:
    out: list[int] = []
    for term in filter(None, value.split(",")):
        first, _, last = term.partition("-")
        out.extend(range(int(first), int(last or first) + 1))
    return out


def encode(rows: Sequence[Row]) -> Row:
    indices = [int(r["index"]) for r in rows]
    columns: Row = {"members": format_index_set(indices)}
    if indices != sorted(indices):
        columns["rowOrder"] = indices
    for field, column, required in _GROUPED:
        groups = _group(rows, field, keep_zero=required)
        if groups:
            columns[column] = groups
    for field, column, wanted in (("admitted", "admitted", True), ("activeOrdinal", "activeOrdinalOne", 1)):
        hits = [int(r["index"]) for r in rows if r.get(field) == wanted]
        if hits:
            columns[column] = format_index_set(hits)
    entries = [_entry(r) for r in sorted(rows, key=lambda r: int(r["index"]))]
    if entries := [e for e in entries if len(e) > 1]:
        columns["entries"] = entries
    return columns


def decode(columns: Row) -> list[Row]:
    order = columns.get("rowOrder") or parse_index_set(columns["members"])
    rows: dict[int, Row] = {i: {"index": i} for i in order}
    for field, column, _ in _GROUPED:
        for group in columns.get(column) or []:
            for i in parse_index_set(group["indexes"]):
                rows[i][field] = group["value"]
    for i in parse_index_set(columns.get("admitted") or ""):
        rows[i]["admitted"] = True
    for i in parse_index_set(columns.get("activeOrdinalOne") or ""):
        rows[i]["activeOrdinal"] = 1
    for entry in columns.get("entries") or []:
        rows[int(entry["index"])].update({k: v for k, v in entry.items() if k != "index"})
    return [_ordered(rows[i]) for i in order]


def _group(rows: Sequence[Row], field: str, *, keep_zero: bool) -> list[Row]:
    by_value: dict[Any, list[int]] = {}
    for row in rows:
        value = row.get(field)
        if value is None or (not keep_zero and value in (0, "")):
            continue
        by_value.setdefault(value, []).append(int(row["index"]))
    # Canonical value order: bytewise for strings, numeric for numbers.
    return [{"value": v, "indexes": format_index_set(by_value[v])} for v in sorted(by_value)]


def _entry(row: Row) -> Row:
    return {"index": int(row["index"]), **{k: row[k] for k in _ENTRY_FIELDS if row.get(k) is not None}}


_ROW_ORDER: Final = (
    "index",
    "incarnation",
    "phase",
    "runningRevision",
    "targetRevision",
    "podCount",
    "servingPodCount",
    "availablePodCount",
    "admitted",
    "activeOrdinal",
    *_ENTRY_FIELDS,
)


def _ordered(row: Row) -> Row:
    return {k: row[k] for k in _ROW_ORDER if k in row}


def canonical_row(row: Row) -> Row:
    """A row in the key order decode() produces, so encoded and dense forms compare equal."""
    return _ordered(row)
