"""Create/delete expectations, after kube-controller-manager's `ControllerExpectations`.

The cache lags our own writes, so right after creating N children a reconcile can
still see too few and create them again. Before issuing the writes a controller
records "expect N creations" for the owner key; the child informer's handler lowers
the count as each creation is observed; the reconcile skips its "create more" step
until `satisfied(key)`. A record older than 5 minutes counts as satisfied, so a lost
watch event delays a controller but never wedges it.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Final

from ome.framework import ratelimit

__all__ = ["EXPECTATIONS_TIMEOUT", "ControllerExpectations"]

# kube-controller-manager's ExpectationsTimeout.
EXPECTATIONS_TIMEOUT: Final = 5 * 60.0


@dataclass(slots=True)
class _Expectation:
    adds: int
    deletes: int
    recorded_at: float

    def fulfilled(self) -> bool:
        # Below zero is fine: an informer can observe more than we expected (e.g. a resync).
        return self.adds <= 0 and self.deletes <= 0


class ControllerExpectations:
    """Outstanding creations and deletions per controller key; one event loop, no locking."""

    def __init__(self, *, clock: ratelimit.Clock | None = None, ttl: float = EXPECTATIONS_TIMEOUT) -> None:
        self._clock: ratelimit.Clock = clock or ratelimit.MonotonicClock()
        self._ttl = ttl
        self._records: dict[Hashable, _Expectation] = {}

    def expect_creations(self, key: Hashable, count: int) -> None:
        """Replace `key`'s expectations with `count` creations (and no deletions)."""
        self._set(key, adds=count, deletes=0)

    def expect_deletions(self, key: Hashable, count: int) -> None:
        """Replace `key`'s expectations with `count` deletions (and no creations)."""
        self._set(key, adds=0, deletes=count)

    def raise_expectations(self, key: Hashable, *, adds: int = 0, deletes: int = 0) -> None:
        """Add to `key`'s outstanding counts without resetting its timestamp (no-op if unset)."""
        record = self._records.get(key)
        if record is not None:
            record.adds += adds
            record.deletes += deletes

    def creation_observed(self, key: Hashable) -> None:
        """One expected creation arrived through the informer."""
        self._lower(key, adds=1, deletes=0)

    def deletion_observed(self, key: Hashable) -> None:
        """One expected deletion arrived through the informer."""
        self._lower(key, adds=0, deletes=1)

    def satisfied(self, key: Hashable) -> bool:
        """True when the cache can be trusted for `key`: nothing outstanding, expired, or never set."""
        record = self._records.get(key)
        if record is None:
            return True
        if record.fulfilled():
            return True
        return self._clock.monotonic() - record.recorded_at > self._ttl

    def pending(self, key: Hashable) -> tuple[int, int]:
        """(creations, deletions) still expected for `key`; (0, 0) if none are recorded."""
        record = self._records.get(key)
        return (record.adds, record.deletes) if record is not None else (0, 0)

    def delete(self, key: Hashable) -> None:
        """Forget `key`, e.g. when its owner is deleted."""
        self._records.pop(key, None)

    def _set(self, key: Hashable, *, adds: int, deletes: int) -> None:
        self._records[key] = _Expectation(adds, deletes, self._clock.monotonic())

    def _lower(self, key: Hashable, *, adds: int, deletes: int) -> None:
        record = self._records.get(key)
        if record is not None:
            record.adds -= adds
            record.deletes -= deletes
