"""Go duration strings, every unit Go's time.ParseDuration takes (no sign: negative durations are invalid here)."""

from __future__ import annotations

import pytest

from ome.config.durations import is_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0.0), ("90s", 90.0), ("30m", 1800.0), ("1h30m", 5400.0), ("1.5h", 5400.0),
        ("250ms", 0.25), ("1m0.5s", 60.5), ("2s500ms", 2.5), ("100us", 1e-4), ("100µs", 1e-4),
        ("100μs", 1e-4), ("1500ns", 1.5e-6), (".5s", 0.5), ("1h1m1s1ms1us1ns", 3661.001001001),
    ],
)  # fmt: skip
def test_go_units_parse(text: str, seconds: float) -> None:
    assert is_duration(text)
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5", "s", "1d", "1.s", "-5s", "5 s", "1mm", "1hs", "ms", "1.2.3s", "1e3s"])
def test_malformed_values_are_rejected(text: str) -> None:
    assert parse_duration(text) is None
