"""Retry a read-modify-write on 409 Conflict, after client-go's `retry.RetryOnConflict`.

Inside a controller, prefer raising the Conflict and letting the rate-limited requeue
retry from fresh cache state. This helper is for the places that must finish now
(finalizer removal, lease-like records): `fn` must re-read the object on every call,
since retrying a write with the same stale resourceVersion cannot succeed.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["is_conflict", "retry_on_conflict"]

T = TypeVar("T")


def is_conflict(exc: BaseException) -> bool:
    """A 409 with reason Conflict. AlreadyExists is also a 409 but retrying cannot fix it."""
    return getattr(exc, "status", None) == 409 and getattr(exc, "reason", "Conflict") != "AlreadyExists"


async def retry_on_conflict(
    fn: Callable[[], Awaitable[T]],
    *,
    steps: int = 5,
    duration: float = 0.01,
    jitter: float = 0.1,
) -> T:
    """Call `fn` until it does not raise a conflict, at most `steps` times; return its result.

    Between tries sleep `duration` plus up to `jitter * duration` (client-go `DefaultRetry`:
    5 steps, 10 ms, factor 1, jitter 0.1). Other errors, and the last conflict, propagate.
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    for attempt in range(1, steps + 1):
        try:
            return await fn()
        except Exception as exc:
            if attempt == steps or not is_conflict(exc):
                raise
        await asyncio.sleep(duration * (1.0 + jitter * random.random()))
    raise AssertionError("unreachable: the last attempt returns or raises")
