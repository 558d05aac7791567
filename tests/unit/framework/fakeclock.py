"""A clock the test steps by hand (ratelimit.Clock)."""

from __future__ import annotations


class FakeClock:
    def __init__(self, start: float = 1_000.0) -> None:
        self.now = start

    def monotonic(self) -> float:
        return self.now

    def step(self, seconds: float) -> None:
        self.now += seconds
