"""Output shared by every command (pure): report documents, FIELD/VALUE tables, masking, colour.

Reports print as tables that fit an 80-column terminal where they can (long values end in `...`), or
in full with `-o json|yaml` as `apiVersion: cli.ome.io/v1alpha1` documents. Colour is added only when
stdout is a terminal and NO_COLOR is unset. Text that looks like a credential is masked as
`[REDACTED]`; a value holding a URL (`://`) shows as `[OMITTED]` where the report says so.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import IO, Any, Final

import yaml

from ome.framework.timefmt import format_time
from ome.kubectl_ome.table import format_table, shorten_end

Obj = dict[str, Any]

API_VERSION: Final = "cli.ome.io/v1alpha1"
REDACTED: Final = "[REDACTED]"
OMITTED: Final = "[OMITTED]"
FULL_VALUES_HINT: Final = "Use -o json or -o yaml for full values."

_CREDENTIAL: Final = re.compile(
    r"(?i)\b(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|auth|credentials?)"
    r"\s*[=:]\s*\S+"
    r"|(?i:bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"
    r"|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"
    r"|\b(?:ghp|gho|ghs|github_pat|hf|sk|xox[abp])_[A-Za-z0-9_]{16,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
)


def redact(text: str) -> str:
    """`text` with every credential-looking span replaced by [REDACTED]."""
    return _CREDENTIAL.sub(REDACTED, text)


def mask(text: str) -> str:
    """Status masking: a value holding `://` is [OMITTED]; credentials are [REDACTED]."""
    if "://" in text:
        return OMITTED
    return redact(text)


def looks_secret(text: str) -> bool:
    return "://" in text or bool(_CREDENTIAL.search(text))


def now_utc() -> datetime:
    return datetime.now(UTC)


def rfc3339(moment: datetime) -> str:
    return format_time(moment)


def render(document: Mapping[str, Any], output: str) -> str:
    """`-o json` (two-space indent) or `-o yaml` of a whole report."""
    if output == "json":
        return json.dumps(document, indent=2, default=str) + "\n"
    return str(yaml.safe_dump(dict(document), sort_keys=False, default_flow_style=False))


def document(kind: str, content: Mapping[str, Any], **top: Any) -> Obj:
    """A report with the shared envelope; `top` adds fields beside `content` (metadata, sources...)."""
    doc: Obj = {"apiVersion": API_VERSION, "kind": kind}
    doc.update({k: v for k, v in top.items() if v is not None})
    doc["content"] = dict(content)
    return doc


def field_table(rows: Sequence[tuple[str, str]], width: int | None = None) -> str:
    """A FIELD/VALUE table; with `width`, values longer than it end in `...`."""
    cells = [(f, shorten_end(v, width) if width else v) for f, v in rows]
    return format_table(("FIELD", "VALUE"), cells)


def dash(value: object) -> str:
    """`-` for an empty field, as the tables print it."""
    if value is None or value == "" or value == []:
        return "-"
    return str(value)


def yes_no(value: bool) -> str:
    return "Yes" if value else "No"


def use_colour(stream: IO[str]) -> bool:
    return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


_GREEN: Final = "\033[32m"
_RED: Final = "\033[31m"
_YELLOW: Final = "\033[33m"
_RESET: Final = "\033[0m"
_STATE_COLOURS: Final = {
    "True": _GREEN,
    "Reported": _GREEN,
    "Ready": _GREEN,
    "OK": _GREEN,
    "Valid": _GREEN,
    "False": _RED,
    "Failed": _RED,
    "Invalid": _RED,
    "Unknown": _YELLOW,
    "Partial": _YELLOW,
    "Unavailable": _YELLOW,
}
_WORD: Final = re.compile(r"(?<![\w/-])(" + "|".join(_STATE_COLOURS) + r")(?![\w-])")


def colourize(text: str) -> str:
    """States coloured for a terminal: green for good, red for bad, yellow for unknown.

    Only the value columns are touched: the header line and each line's first cell stay plain, so
    the column alignment (computed before colouring) still holds on screen."""
    out = []
    for i, line in enumerate(text.splitlines(keepends=True)):
        if i == 0:
            out.append(line)
            continue
        head, sep, rest = line.partition("   ")
        out.append(
            head + sep + _WORD.sub(lambda m: f"{_STATE_COLOURS[m.group(1)]}{m.group(1)}{_RESET}", rest)
        )
    return "".join(out)
