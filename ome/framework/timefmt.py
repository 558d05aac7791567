"""Kubernetes API timestamps: metav1.Time and metav1.MicroTime (RFC 3339, UTC, "Z"), written and read.

One place for the format: events, leases, status conditions and annotations all use these.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

TIME_FORMAT: Final = "%Y-%m-%dT%H:%M:%SZ"
MICRO_TIME_FORMAT: Final = "%Y-%m-%dT%H:%M:%S.%fZ"


def _utc(moment: datetime) -> datetime:
    # A naive datetime is taken as UTC (what the API means), never as the machine's local time.
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def format_time(moment: datetime) -> str:
    """metav1.Time: whole seconds, UTC, e.g. "2026-01-02T03:04:05Z"."""
    return _utc(moment).strftime(TIME_FORMAT)


def format_micro_time(moment: datetime) -> str:
    """metav1.MicroTime (Lease, Event series): microseconds always present, UTC."""
    return _utc(moment).strftime(MICRO_TIME_FORMAT)


def parse_time(value: str) -> datetime:
    """An RFC 3339 timestamp as the apiserver writes it ("Z" or an offset, fractions optional), in UTC."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


def now() -> str:
    """The current time as metav1.Time."""
    return format_time(datetime.now(UTC))
