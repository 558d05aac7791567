"""Values written as text the way Helm's Go functions write them, so the Python rendering matches
`helm template` byte for byte."""

from __future__ import annotations

import json
from typing import Any


def go_number(value: Any) -> Any:
    # Helm reads every YAML number as float64, and Go's encoder writes an integral one without a fraction.
    if isinstance(value, dict):
        return {k: go_number(v) for k, v in value.items()}
    if isinstance(value, list):
        return [go_number(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def go_text(value: Any) -> str:
    """Sprig's `default "" | toString`."""
    value = go_number(value)
    if not value:
        return ""
    if isinstance(value, bool):
        return "true"
    return str(value)


def go_json(value: Any) -> str:
    """What Helm's toJson writes: compact, keys sorted, <, > and & escaped as Go's encoder does."""
    text = json.dumps(go_number(value), separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
