"""The reconcile contract, after controller-runtime's `pkg/reconcile`.

A reconciler gets only a key, never the event: it reads current state and drives the
world toward it (level-based), so missed or merged events do no harm. The outcome is
data: return a `Result`, or raise. Failures get per-key exponential backoff from the
work queue; `requeue_after` is for polling, and resets that backoff.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Reconciler", "Request", "Result", "TerminalError", "reconciler_from"]


@dataclass(frozen=True, slots=True)
class Request:
    """The key of the object to reconcile; `namespace` is "" for cluster-scoped objects."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@dataclass(frozen=True, slots=True)
class Result:
    requeue_after: float | None = None
    """Seconds until the key is reconciled again (polling); None or <= 0: only on the next event."""


class TerminalError(Exception):
    """Logged and counted, never retried: the input must change before a retry can succeed."""


class RetryError(Exception):
    """An expected failure (a reference not there yet, a dependency not ready): retried with backoff and
    logged with its message, without a traceback, since it is no bug."""


class Reconciler(Protocol):
    async def reconcile(self, req: Request) -> Result: ...


class _FuncReconciler:
    __slots__ = ("_fn",)

    def __init__(self, fn: Callable[[Request], Awaitable[Result]]) -> None:
        self._fn = fn

    async def reconcile(self, req: Request) -> Result:
        return await self._fn(req)


def reconciler_from(fn: Callable[[Request], Awaitable[Result]]) -> Reconciler:
    """Wrap a coroutine function as a `Reconciler`, so small controllers and tests need no class."""
    return _FuncReconciler(fn)
