"""Per-key work queue with client-go semantics (`util/workqueue`: queue, delaying, rate limiting).

Guarantees, as in client-go's doc.go:
* fair: items are handed out in the order they were added, within a priority (below);
* stingy: an item added many times before it is processed is processed once;
* a key is never processed by two workers at once: a key added while it is being
  processed waits in `_dirty` and is queued again by `done()`;
* shutdown: new adds are ignored, items already queued are still handed out, then
  `get()` raises `ShutDown`.

Two priorities, as controller-runtime's priority queue has: `HIGH` items are handed out before
`NORMAL` ones. A controller adds a primary object whose spec generation its status has not observed
yet at `HIGH`, so a spec change is not queued behind hundreds of child status events (each of which
only re-confirms what the service already reports). An item waiting at `NORMAL` and added again at
`HIGH` is raised (moved to the end of `HIGH`); an item keeps the highest priority it was added with
until it is handed out.

Invariant: an item is in exactly one of the two `_queues` (ordered sets, one per priority) iff it is
in `_dirty` and not in `_processing`.

Delayed adds live in a heap served by one event-loop timer, re-armed only when the
earliest deadline changes; a key waiting twice keeps the earlier deadline. Retries
take their delay from a `RateLimiter` (ratelimit.py).

Everything runs on one event loop: `add*`, `done` and `forget` are plain functions
(informer handlers call them and must not await); only `get()` waits.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections import OrderedDict, deque
from collections.abc import Hashable
from typing import Final, Generic, TypeVar

from ome.framework import ratelimit
from ome.framework.workqueue_metrics import QueueMetrics

__all__ = ["HIGH", "NORMAL", "ShutDown", "WorkQueue"]

T = TypeVar("T", bound=Hashable)

NORMAL: Final = 0
HIGH: Final = 1


class _Delayed(Generic[T]):
    """A heap entry; `live` is cleared when an earlier deadline supersedes it (lazy deletion)."""

    __slots__ = ("item", "live", "ready_at", "seq")

    def __init__(self, ready_at: float, seq: int, item: T) -> None:
        self.ready_at = ready_at
        self.seq = seq  # ties break by insertion order, so items themselves are never compared
        self.item = item
        self.live = True

    def __lt__(self, other: _Delayed[T]) -> bool:
        return (self.ready_at, self.seq) < (other.ready_at, other.seq)


class ShutDown(Exception):
    """`get()` on a queue that is shut down and has nothing left to hand out."""


class WorkQueue(Generic[T]):
    """De-duplicating FIFO of keys with delayed and rate-limited adds.

    `name` labels the `workqueue_*` metrics; an empty name records none (as in client-go).
    """

    def __init__(
        self,
        name: str = "",
        *,
        rate_limiter: ratelimit.RateLimiter | None = None,
        clock: ratelimit.Clock | None = None,
    ) -> None:
        self.name = name
        self._clock: ratelimit.Clock = clock or ratelimit.MonotonicClock()
        self._rate_limiter = rate_limiter or ratelimit.default_controller_rate_limiter(clock=clock)
        # Indexed by priority; OrderedDict for O(1) removal of a raised item and popping the oldest.
        self._queues: tuple[OrderedDict[T, None], OrderedDict[T, None]] = (OrderedDict(), OrderedDict())
        self._dirty: set[T] = set()
        self._urgent: set[T] = set()  # dirty items added at HIGH, while they are processed
        self._processing: set[T] = set()
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._shutting_down = False
        self._heap: list[_Delayed[T]] = []
        self._waiting: dict[T, _Delayed[T]] = {}
        self._seq = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._metrics = QueueMetrics(name, self._clock.monotonic) if name else None

    # -- basic queue -------------------------------------------------------------------------

    def add(self, item: T, priority: int = NORMAL) -> None:
        """Queue `item` unless it is already waiting (then only raise it to `priority`); if it is being
        processed, queue it after `done`."""
        if self._shutting_down:
            return
        urgent = priority >= HIGH
        if item in self._dirty:
            if urgent:
                self._raise(item)
            return
        if self._metrics is not None:
            self._metrics.add(item)
        self._dirty.add(item)
        if item in self._processing:
            if urgent:
                self._urgent.add(item)
            return
        self._enqueue(item, HIGH if urgent else NORMAL)

    def _raise(self, item: T) -> None:
        if item in self._processing:
            self._urgent.add(item)
        elif item in self._queues[NORMAL]:
            del self._queues[NORMAL][item]
            self._queues[HIGH][item] = None

    def _enqueue(self, item: T, priority: int) -> None:
        self._queues[priority][item] = None
        self._wake_one()

    def __len__(self) -> int:
        return len(self._queues[NORMAL]) + len(self._queues[HIGH])

    async def get(self) -> T:
        """Wait for the next item and mark it processing; the caller must call `done(item)`.

        Raises `ShutDown` once the queue is shut down and empty.
        """
        while not (self._queues[HIGH] or self._queues[NORMAL]):
            if self._shutting_down:
                raise ShutDown
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake_one()  # we were woken for an item; pass the wake-up on
                elif waiter in self._waiters:
                    self._waiters.remove(waiter)
                raise
        item = (self._queues[HIGH] or self._queues[NORMAL]).popitem(last=False)[0]
        if self._metrics is not None:
            self._metrics.get(item)
        self._processing.add(item)
        self._dirty.discard(item)
        return item

    def done(self, item: T) -> None:
        """Finish processing `item`; if it was added meanwhile, queue it again (at the highest priority
        it was added with)."""
        if self._metrics is not None:
            self._metrics.done(item)
        self._processing.discard(item)
        urgent = item in self._urgent
        self._urgent.discard(item)
        if item in self._dirty:
            self._enqueue(item, HIGH if urgent else NORMAL)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def shutdown(self) -> None:
        """Ignore new adds and drop delayed ones; workers get what is queued, then `ShutDown`."""
        self._begin_shutdown()

    def _begin_shutdown(self) -> None:
        self._shutting_down = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._heap.clear()
        self._waiting.clear()
        self._urgent.clear()
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    # -- delayed adds ------------------------------------------------------------------------

    def add_after(self, item: T, delay: float) -> None:
        """Add `item` once `delay` seconds have passed; a key already waiting keeps the earlier time."""
        if self._shutting_down:
            return
        if self._metrics is not None:
            self._metrics.retry()  # client-go counts every AddAfter as a retry
        if delay <= 0:
            self.add(item)
            return
        ready_at = self._clock.monotonic() + delay
        waiting = self._waiting.get(item)
        if waiting is not None:
            if waiting.ready_at <= ready_at:
                return
            waiting.live = False
        entry = _Delayed(ready_at, next(self._seq), item)
        self._waiting[item] = entry
        heapq.heappush(self._heap, entry)
        if self._timer is None or ready_at < self._timer_at:
            self._arm(ready_at)

    def _arm(self, ready_at: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        delay = max(0.0, ready_at - self._clock.monotonic())
        self._timer = asyncio.get_running_loop().call_later(delay, self._fire)
        self._timer_at = ready_at

    def _fire(self) -> None:
        self._timer = None
        now = self._clock.monotonic()
        heap = self._heap
        while heap and (not heap[0].live or heap[0].ready_at <= now):
            entry = heapq.heappop(heap)
            if entry.live:
                del self._waiting[entry.item]
                self.add(entry.item)
        if heap:
            # The loop may fire a little early (clock resolution); re-arming covers that too.
            self._arm(heap[0].ready_at)

    # -- rate-limited adds -------------------------------------------------------------------

    def add_rate_limited(self, item: T) -> None:
        """Add `item` after the rate limiter's delay; each call counts as one more failure."""
        self.add_after(item, self._rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Reset `item`'s failure history (it succeeded); does not remove it from the queue."""
        self._rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self._rate_limiter.num_requeues(item)
