"""`kubectl ome runtime explain --isvc NAME --with-effective`: the effective context after the selection
table (pure).

One SCOPE/FIELD/VALUE table under its heading: how the service gets its runtime (SELECTION, SOURCE, `-`
when there is none; runtime identities cut in the middle to the table's 54 characters), whether
the CLI could observe the runtime's inheritance chain (INHERITANCE, REASON when it could not, one ROOT-FIRST
row per runtime from the root), the CAVEAT, then exactly the rows `runtime effective` prints. It is
collected apart from the selection above and never changes its verdicts; when it cannot be collected at
all, two rows say so and the command still succeeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from ome.kubectl_ome.effective import VALUE_WIDTH, Effective, effective_rows, format_effective
from ome.kubectl_ome.fetch import LiveRuntime
from ome.kubectl_ome.table import middle_cut

Row = tuple[str, str, str]

HEADING: Final = "Effective context (separate observation; selector verdict unchanged):"
CAVEAT: Final = "Independent snapshot; not rollout convergence"
UNAVAILABLE_CAVEAT: Final = "Selector verdict above is unchanged"
NO_RUNTIMES: Final = "No serving runtimes found for selector."
REQUIRES_ISVC: Final = "--with-effective requires --isvc"
OBSERVED: Final = "Observed"
UNAVAILABLE: Final = "Unavailable"


def context_rows(live: LiveRuntime, report: Effective) -> list[Row]:
    """The context's rows: selection and source, the inheritance observation, the caveat, the report."""
    read = live.read
    rows: list[Row] = [("Service", "SELECTION", read.selection),
                       ("Service", "SOURCE", middle_cut(read.ref, VALUE_WIDTH) if read.ref else "-")]
    observed = live.inheritance == OBSERVED
    rows.append(("Source", "INHERITANCE", OBSERVED if observed else UNAVAILABLE))
    if not observed:
        rows.append(("Source", "REASON", live.inheritance_reason or read.reason or "Unreadable"))
    rows += [("Source", "ROOT-FIRST", middle_cut(link, VALUE_WIDTH)) for link in live.chain]
    rows.append(("Service", "CAVEAT", CAVEAT))
    return rows + effective_rows(report)


def unavailable_rows() -> list[Row]:
    """What the context says when the CLI could not collect it."""
    return [("Service", "EVIDENCE", UNAVAILABLE), ("Service", "CAVEAT", UNAVAILABLE_CAVEAT)]


def format_context(rows: Sequence[Row]) -> str:
    return f"{HEADING}\n{format_effective(rows)}"


def append_context(selection_table: str, rows: Sequence[Row]) -> str:
    """The selection table (empty when there were no runtimes), a blank line, then the context."""
    return f"{selection_table}\n{format_context(rows)}"


__all__ = ["CAVEAT", "HEADING", "NO_RUNTIMES", "REQUIRES_ISVC", "append_context", "context_rows",
           "format_context", "unavailable_rows"]
