"""Kubernetes Events for users (`kubectl describe`), after client-go's `tools/record`.

`event()` is a plain call that never waits on the apiserver: it queues the event and
one background task writes core/v1 Events. Under overload events are dropped, not
awaited, as client-go's broadcaster does, because a reconcile must never stall on
telemetry.

Identical events (same object, type, reason and message) within 10 minutes are
aggregated the way client-go's EventCorrelator dedupes them: the existing Event gets
its `count` and `lastTimestamp` patched instead of a new Event being created. The
decision is made in the writer task, so it sees the names the apiserver accepted.

Before an event is queued it must pass a spam filter, client-go's EventSourceObjectSpamFilter: a token
bucket per source, object and event type (`EventBudget`; client-go's 25 events, then one per 5 minutes,
unless the manager is given another). Repeats count too, so a hot loop cannot bump `count` forever.
Recorders that share one `EventSpamFilter` (the manager's) share buckets where their keys are equal, as
client-go's recorders share their broadcaster's correlator.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal, Protocol

import structlog
from structlog.typing import FilteringBoundLogger

from ome.framework import ratelimit, resources
from ome.framework.timefmt import format_time

__all__ = ["EventBudget", "EventRecorder", "EventSpamFilter", "EventType", "EventWriter"]

Obj = dict[str, Any]
EventType = Literal["Normal", "Warning"]

AGGREGATION_WINDOW: Final = 10 * 60.0  # client-go's defaultAggregateIntervalInSeconds
_CACHE_ENTRIES: Final = 4096  # client-go's maxLruCacheEntries
_MAX_QUEUED: Final = 1000  # client-go's maxQueuedEvents
_DROP_LOG_EVERY: Final = 1000
# client-go's defaultSpamBurst and defaultSpamQPS (1/300): what the manager keeps unless configured.
DEFAULT_BURST: Final = 25
DEFAULT_REFILL_INTERVAL: Final = 300.0


class EventWriter(Protocol):
    """The two client verbs the recorder uses."""

    async def create(self, res: Any, obj: Obj, namespace: str | None = None) -> Obj: ...

    async def patch(self, res: Any, name: str, patch: Obj, namespace: str | None = None) -> Obj: ...


@dataclass(frozen=True, slots=True)
class EventBudget:
    """Per spam key: `burst` events at once, then one more each `refill_interval` seconds."""

    burst: int = DEFAULT_BURST
    refill_interval: float = DEFAULT_REFILL_INTERVAL

    def __post_init__(self) -> None:
        if isinstance(self.burst, bool) or not isinstance(self.burst, int) or self.burst < 1:
            raise ValueError(f"event budget burst must be a positive integer, got {self.burst!r}")
        if not self.refill_interval > 0:  # also rejects NaN
            raise ValueError(f"event budget refill interval must be > 0 s, got {self.refill_interval!r}")


@dataclass(slots=True)
class _Bucket:
    tokens: float
    updated_at: float


class EventSpamFilter:
    """A token bucket per key, at most `max_keys` of them (least recently used evicted first).

    Pure bookkeeping over an injected clock; a new or evicted key starts with a full bucket. Tokens
    accrue continuously (golang.org/x/time/rate, which client-go's passive limiter wraps).
    """

    def __init__(
        self,
        budget: EventBudget | None = None,
        *,
        clock: ratelimit.Clock | None = None,
        max_keys: int = _CACHE_ENTRIES,
    ) -> None:
        self.budget = budget or EventBudget()
        self._clock: ratelimit.Clock = clock or ratelimit.MonotonicClock()
        self._max_keys = max_keys
        self._buckets: OrderedDict[tuple[str, ...], _Bucket] = OrderedDict()

    def __len__(self) -> int:
        return len(self._buckets)

    def allow(self, key: tuple[str, ...]) -> bool:
        """Takes a token from `key`'s bucket; False (nothing taken) when it is empty."""
        now = self._clock.monotonic()
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(float(self.budget.burst), now)
            while len(self._buckets) > self._max_keys:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
            refilled = max(0.0, now - bucket.updated_at) / self.budget.refill_interval
            bucket.tokens = min(float(self.budget.burst), bucket.tokens + refilled)
            bucket.updated_at = now
        if bucket.tokens < 1.0:
            return False
        bucket.tokens -= 1.0
        return True


@dataclass(frozen=True, slots=True)
class _Pending:
    key: tuple[str, ...]
    namespace: str
    involved: Obj
    type_: EventType
    reason: str
    message: str
    timestamp: str  # when event() was called, not when it was written
    observed_at: float


@dataclass(slots=True)
class _Seen:
    name: str
    count: int
    observed_at: float


class EventRecorder:
    """Records events about objects as `component` (the Event's `source.component`)."""

    def __init__(
        self,
        client: EventWriter,
        component: str,
        *,
        host: str | None = None,
        max_queued: int = _MAX_QUEUED,
        clock: ratelimit.Clock | None = None,
        logger: FilteringBoundLogger | None = None,
        budget: EventBudget | None = None,
        spam_filter: EventSpamFilter | None = None,
    ) -> None:
        """`spam_filter`: one shared with other recorders (the manager's); else a filter of this
        recorder's own with `budget` (None: client-go's)."""
        if budget is not None and spam_filter is not None:
            raise ValueError("pass a budget or a shared spam filter, not both")
        self._client = client
        self._source: Obj = {"component": component} | ({"host": host} if host else {})
        self._component = component
        self._host = host
        self._clock: ratelimit.Clock = clock or ratelimit.MonotonicClock()
        self._spam = spam_filter if spam_filter is not None else EventSpamFilter(budget, clock=self._clock)
        base: FilteringBoundLogger = logger or structlog.get_logger("ome.framework.events")
        self._log = base.bind(component=component)
        self._pending: asyncio.Queue[_Pending] = asyncio.Queue(maxsize=max_queued)
        self._seen: OrderedDict[tuple[str, ...], _Seen] = OrderedDict()
        self._writer: asyncio.Task[None] | None = None
        self._closed = False
        self.dropped = 0
        """Events discarded because the queue was full or the recorder closed."""
        self.throttled = 0
        """Events discarded by the spam filter (their bucket was empty); not logged."""

    @property
    def budget(self) -> EventBudget:
        return self._spam.budget

    def event(self, obj: Obj, type_: EventType, reason: str, message: str) -> None:
        """Queue an event about `obj`; returns at once. Must be called on the event loop."""
        meta = obj.get("metadata") or {}
        involved = {
            "apiVersion": obj.get("apiVersion", ""),
            "kind": obj.get("kind", ""),
            "namespace": meta.get("namespace", ""),
            "name": meta.get("name", ""),
            "uid": meta.get("uid", ""),
        }
        if meta.get("resourceVersion"):
            involved["resourceVersion"] = meta["resourceVersion"]
        key = (
            involved["apiVersion"], involved["kind"], involved["namespace"], involved["name"],
            involved["uid"], type_, reason, message,
        )  # fmt: skip
        pending = _Pending(
            key=key,
            # Events of cluster-scoped objects go to "default", as kubectl and client-go expect.
            namespace=involved["namespace"] or "default",
            involved={k: v for k, v in involved.items() if v},
            type_=type_,
            reason=reason,
            message=message,
            timestamp=format_time(datetime.now(UTC)),
            observed_at=self._clock.monotonic(),
        )
        if self._closed:
            self._drop(pending, "recorder closed")
            return
        # A full queue drops before the filter, as client-go's broadcaster does: no token is spent on it.
        if self._pending.full():
            self._drop(pending, "queue full")
            return
        # client-go's spam key: the source, the object and the type, not the reason or message.
        spam_key = (
            self._component, self._host or "", involved["kind"], involved["namespace"], involved["name"],
            involved["uid"], involved["apiVersion"], type_,
        )  # fmt: skip
        if not self._spam.allow(spam_key):
            self.throttled += 1
            return
        self._pending.put_nowait(pending)  # cannot fail: checked above, and nothing ran in between
        if self._writer is None:
            self._writer = asyncio.get_running_loop().create_task(self._run(), name="event-recorder")

    async def flush(self) -> None:
        """Wait until every queued event has been written (or has failed)."""
        if self._writer is not None:
            await self._pending.join()

    async def aclose(self, grace_period: float = 5.0) -> None:
        """Stop accepting events, write what is queued for up to `grace_period`, then stop."""
        self._closed = True
        if self._writer is None:
            return
        try:
            async with asyncio.timeout(grace_period):
                await self._pending.join()
        except TimeoutError:
            self._log.warning("Events still queued at shutdown were dropped", count=self._pending.qsize())
        self._writer.cancel()
        await asyncio.gather(self._writer, return_exceptions=True)
        self._writer = None

    def _drop(self, pending: _Pending, why: str) -> None:
        self.dropped += 1
        if self.dropped % _DROP_LOG_EVERY == 1:  # the first drop, then every 1000th: no log flood
            self._log.warning("Event dropped", why=why, reason=pending.reason, dropped=self.dropped)

    async def _run(self) -> None:
        while True:
            pending = await self._pending.get()
            try:
                await self._write(pending)
            except Exception as exc:
                self._log.warning(
                    "Unable to write event",
                    reason=pending.reason,
                    namespace=pending.involved.get("namespace"),
                    name=pending.involved.get("name"),
                    error=str(exc),
                )
            finally:
                self._pending.task_done()

    async def _write(self, pending: _Pending) -> None:
        seen = self._seen.get(pending.key)
        if seen is not None and pending.observed_at - seen.observed_at <= AGGREGATION_WINDOW:
            if await self._patch(pending, seen):
                return
        created = await self._client.create(resources.EVENTS, self._body(pending), pending.namespace)
        self._remember(pending, str(created.get("metadata", {}).get("name") or ""))

    async def _patch(self, pending: _Pending, seen: _Seen) -> bool:
        """Bump the existing Event; False if it is gone (Events expire, 1 h by default)."""
        seen.count += 1
        seen.observed_at = pending.observed_at
        self._seen.move_to_end(pending.key)
        patch = {"count": seen.count, "lastTimestamp": pending.timestamp, "message": pending.message}
        try:
            await self._client.patch(resources.EVENTS, seen.name, patch, pending.namespace)
        except Exception as exc:
            if getattr(exc, "status", None) != 404:
                raise
            del self._seen[pending.key]
            return False
        return True

    def _remember(self, pending: _Pending, name: str) -> None:
        if not name:
            return
        self._seen[pending.key] = _Seen(name, 1, pending.observed_at)
        self._seen.move_to_end(pending.key)
        while len(self._seen) > _CACHE_ENTRIES:
            self._seen.popitem(last=False)

    def _body(self, pending: _Pending) -> Obj:
        name = pending.involved.get("name", "event")
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Event",
            # client-go's naming: the object name plus the time in hex nanoseconds.
            "metadata": {"name": f"{name}.{time.time_ns():x}", "namespace": pending.namespace},
            "involvedObject": pending.involved,
            "reason": pending.reason,
            "message": pending.message,
            "type": pending.type_,
            "source": self._source,
            "firstTimestamp": pending.timestamp,
            "lastTimestamp": pending.timestamp,
            "count": 1,
            "reportingComponent": self._component,
            "reportingInstance": self._host or "",
        }
        return body


