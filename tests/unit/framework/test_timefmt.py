from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from ome.framework import timefmt


def test_time_is_whole_seconds_in_utc_with_z() -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, 678_000, tzinfo=timezone(timedelta(hours=2)))
    assert timefmt.format_time(moment) == "2026-01-02T01:04:05Z"
    assert timefmt.format_time(datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02T03:04:05Z", "naive means UTC"


def test_micro_time_keeps_microseconds() -> None:
    assert timefmt.format_micro_time(datetime(2026, 1, 2, 3, 4, 5, 7, tzinfo=UTC)) == "2026-01-02T03:04:05.000007Z"


@pytest.mark.parametrize(
    "text", ["2026-01-02T03:04:05Z", "2026-01-02T05:04:05+02:00", "2026-01-02T03:04:05.000000Z"]
)
def test_parse_reads_what_the_apiserver_writes(text: str) -> None:
    assert timefmt.parse_time(text) == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
