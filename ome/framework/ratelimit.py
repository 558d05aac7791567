"""Rate limiters for work-queue retries, after client-go's `default_rate_limiters.go`.

A limiter answers "how long must this item wait before its next try". Policies are
small objects that compose: the controller default is the max of a per-item
exponential backoff (one failing key slows down on its own) and a global token
bucket (many failing keys together cannot flood the apiserver).

Time comes from a `Clock` so tests step a fake clock instead of sleeping.
"""

from __future__ import annotations

import math
import time
from collections.abc import Hashable
from typing import Protocol

__all__ = [
    "BucketRateLimiter",
    "Clock",
    "ItemExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "MonotonicClock",
    "RateLimiter",
    "default_controller_rate_limiter",
]


class Clock(Protocol):
    """Source of monotonic seconds; the test hook for everything time-based."""

    def monotonic(self) -> float: ...


class MonotonicClock:
    """The real clock: `time.monotonic`."""

    def monotonic(self) -> float:
        return time.monotonic()


class RateLimiter(Protocol):
    def when(self, item: Hashable) -> float:
        """Seconds `item` must wait before it is retried; records one more failure."""
        ...

    def forget(self, item: Hashable) -> None:
        """Stop tracking `item` (it succeeded); its backoff starts over."""
        ...

    def num_requeues(self, item: Hashable) -> int:
        """Failures recorded for `item` since it was last forgotten."""
        ...


class ItemExponentialFailureRateLimiter:
    """Per-item backoff: `base * 2**failures`, capped at `max_delay`."""

    def __init__(self, base: float = 0.005, max_delay: float = 1000.0) -> None:
        if base <= 0 or max_delay < base:
            raise ValueError(f"need 0 < base <= max_delay, got base={base} max_delay={max_delay}")
        self._base = base
        self._max = max_delay
        # Past this exponent the delay is already capped; stops 2**n overflowing a float.
        self._max_exp = math.ceil(math.log2(max_delay / base)) + 1
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        exp = self._failures.get(item, 0)
        self._failures[item] = exp + 1
        if exp >= self._max_exp:
            return self._max
        return min(self._base * (2.0**exp), self._max)

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter:
    """Global token bucket with reservation semantics (golang.org/x/time/rate `Reserve`).

    Every call takes a token even if none is available yet; the returned delay is
    when that token will exist. So at `qps=10, burst=100` the first 100 calls get 0
    and later ones are spaced 100 ms apart. Items are not tracked.
    """

    def __init__(self, qps: float = 10.0, burst: int = 100, *, clock: Clock | None = None) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"need qps > 0 and burst >= 1, got qps={qps} burst={burst}")
        self._qps = qps
        self._burst = float(burst)
        self._clock: Clock = clock or MonotonicClock()
        self._tokens = float(burst)
        self._last = self._clock.monotonic()

    def when(self, item: Hashable) -> float:
        now = self._clock.monotonic()
        elapsed = max(0.0, now - self._last)
        tokens = min(self._burst, self._tokens + elapsed * self._qps) - 1.0
        self._tokens = tokens
        self._last = now
        return 0.0 if tokens >= 0 else -tokens / self._qps

    def forget(self, item: Hashable) -> None:
        pass

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """Asks every limiter (each records the failure) and waits for the longest answer."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self._limiters = limiters

    def when(self, item: Hashable) -> float:
        # A list, not a generator: every limiter must see the failure, not just the first ones.
        return max([limiter.when(item) for limiter in self._limiters])

    def forget(self, item: Hashable) -> None:
        for limiter in self._limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self._limiters)


def default_controller_rate_limiter(*, clock: Clock | None = None) -> RateLimiter:
    """controller-runtime's default: max(per-item 5 ms * 2**n up to 1000 s, 10 qps burst 100)."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(base=0.005, max_delay=1000.0),
        BucketRateLimiter(qps=10.0, burst=100, clock=clock),
    )
