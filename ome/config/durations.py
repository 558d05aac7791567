"""Durations written as Go's time.Duration / metav1.Duration: "90s", "30m", "1h30m", "250ms", "1.5us"
(one parser for config, flags and specs). Units are Go's: h, m, s, ms, us (or µs, μs), ns."""

from __future__ import annotations

import re
from typing import Final

_UNITS: Final = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ns": 1e-9}
# Longest units first, so "ms" is not read as "m" followed by a stray "s".
_UNIT: Final = "|".join(sorted((re.escape(u) for u in _UNITS), key=len, reverse=True))
_PART: Final = re.compile(rf"(\d+(?:\.\d+)?|\.\d+)({_UNIT})")
_DURATION: Final = re.compile(rf"(?:(?:\d+(?:\.\d+)?|\.\d+)(?:{_UNIT}))+")


def is_duration(value: str) -> bool:
    return value == "0" or bool(_DURATION.fullmatch(value))


def parse_duration(value: str | None) -> float | None:
    """Seconds, or None for an empty or malformed value (lenient: callers fall back to a default)."""
    if not value or not is_duration(value):
        return None
    if value == "0":
        return 0.0
    return sum(float(number) * _UNITS[unit] for number, unit in _PART.findall(value))
