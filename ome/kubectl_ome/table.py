"""Plain-text tables as kubectl prints them (pure): columns padded to the widest cell, three spaces apart."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

PADDING: Final = 3


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Header line and one line per row; the last column is not padded, so lines have no trailing blanks."""
    lines = [list(headers), *[list(r) for r in rows]]
    widths = [max(len(line[i]) for line in lines) for i in range(len(headers))]
    out = []
    for line in lines:
        cells = [cell.ljust(widths[i] + PADDING) for i, cell in enumerate(line[:-1])]
        out.append(("".join(cells) + line[-1]).rstrip())
    return "\n".join(out) + "\n"


def shorten_middle(value: str, limit: int, keep: int = 4) -> str:
    """`value` if it fits in `limit`, else its first and last `keep` characters around `...`."""
    if len(value) <= limit:
        return value
    return f"{value[:keep]}...{value[-keep:]}"


def shorten_end(value: str, limit: int) -> str:
    """`value` if it fits in `limit`, else its start cut to end in `...`."""
    if len(value) <= limit:
        return value
    return value[: max(limit - 3, 0)] + "..."


def middle_cut(value: str, limit: int) -> str:
    """`value` if it fits in `limit`, else both of its ends around `...` (the start one longer when the
    room is odd), so a cut resource identity keeps its kind and its name's end."""
    if len(value) <= limit:
        return value
    if limit <= 3:
        return "..."[:limit]
    room = limit - 3
    left = (room + 1) // 2
    right = room - left
    return value[:left] + "..." + (value[-right:] if right else "")
