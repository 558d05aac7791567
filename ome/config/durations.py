"""Durations written as Go's metav1.Duration: "90s", "30m", "1h30m" (one parser for config, flags, specs)."""

from __future__ import annotations

import re
from typing import Final

_UNITS: Final = {"h": 3600.0, "m": 60.0, "s": 1.0}
_DURATION: Final = re.compile(r"(\d+(\.\d+)?[hms])+")
_PART: Final = re.compile(r"(\d+(?:\.\d+)?)([hms])")


def is_duration(value: str) -> bool:
    return value == "0" or bool(_DURATION.fullmatch(value))


def parse_duration(value: str | None) -> float | None:
    """Seconds, or None for an empty or malformed value (lenient: callers fall back to a default)."""
    if not value or not is_duration(value):
        return None
    if value == "0":
        return 0.0
    return sum(float(number) * _UNITS[unit] for number, unit in _PART.findall(value))
