"""Controller: watches feed a work queue, workers reconcile its keys.

After controller-runtime's `pkg/internal/controller`. Handlers registered on informers
only enqueue `Request`s (they may fire before `start`; the queue buffers them). `start`
waits for every watched informer to finish its first list, so a reconciler never
acts on a half-filled cache, then runs `max_concurrent_reconciles` workers. The queue
guarantees one key is never reconciled by two workers at once.

Each outcome maps to exactly one queue action (controller-runtime `reconcileHandler`):

    raised TerminalError         counted and logged, not requeued
    raised anything else         add_rate_limited (per-key backoff + global bucket); this includes a
                                 CancelledError the reconciler let escape: only a cancellation of the
                                 worker itself (the manager stopping it) ends a worker
    Result(requeue_after > 0)    forget + add_after (polling resets the backoff)
    Result()                     forget

Every log record of a reconcile, including the reconciler's own structlog calls,
carries `controller`, `namespace`, `name` and `reconcile_id` through contextvars.

A primary object whose `metadata.generation` is ahead of its `status.observedGeneration` (a spec
change, or a new object, that no reconcile has reported yet) is queued at the work queue's HIGH
priority; every other event, retry and resync at NORMAL. Under a backlog of child events (pods and
Deployments moving through a rollout) a spec change then waits only for the reconciles already
running and for other unobserved spec changes, so its observedGeneration follows in about one
reconcile. Which key is reconciled changes order only; every key is still reconciled, whole.

With a `sync_period` (controller-runtime's SyncPeriod), every object cached by the primary
informers (`for_`) is enqueued again every period, jittered to [0.9, 1.1) of it, so an event
that was missed is repaired without a restart. It bypasses predicates: its point is to reconcile
objects whose events were lost, which a change filter would drop.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import Final, Protocol

import structlog
from structlog.typing import FilteringBoundLogger

from ome.framework import errors, handlers, ratelimit
from ome.framework.controller_metrics import ControllerMetrics
from ome.framework.failed_frames import clear_failed_frames
from ome.framework.handlers import EventType, Handler, Obj
from ome.framework.predicates import Predicate
from ome.framework.reconcile import Reconciler, Request, Result, RetryError, TerminalError
from ome.framework.workqueue import HIGH, NORMAL, ShutDown, WorkQueue

__all__ = ["Controller", "Informer", "unobserved"]

# Python has no panics; these built-in errors are its nil dereferences and index-out-of-range:
# bugs in the reconciler rather than failures of the world, so they are counted apart.
_PANIC_TYPES: Final = (AssertionError, AttributeError, LookupError, NameError, TypeError, ZeroDivisionError)
_SYNC_POLL_SECONDS: Final = 0.05
# controller-runtime's calculateResyncPeriod: each period is stretched by a factor in [0.9, 1.1).
RESYNC_JITTER: Final = 0.1


class Informer(Protocol):
    """What a controller needs from an informer: a handler hook and the first-list flag."""

    def add_handler(self, fn: Callable[[EventType, Obj, Obj | None], None]) -> None: ...

    @property
    def has_synced(self) -> bool: ...


class PrimaryInformer(Informer, Protocol):
    """A primary informer also hands out what it caches, for the periodic resync."""

    def list(self) -> list[Obj]: ...


class Controller:
    """Runs one reconciler over the keys its watches produce.

    `reconcile_timeout` (seconds) cancels a reconcile that runs longer and counts it as
    an error; `cache_sync_timeout` bounds the wait for informers in `start`; `sync_period`
    (seconds, None for never) re-enqueues every primary object that often. `sleep` and `rng`
    drive the resync timer; tests inject them.
    """

    def __init__(
        self,
        name: str,
        reconciler: Reconciler,
        *,
        max_concurrent_reconciles: int = 1,
        rate_limiter: ratelimit.RateLimiter | None = None,
        reconcile_timeout: float | None = None,
        cache_sync_timeout: float = 120.0,
        sync_period: float | None = None,
        logger: FilteringBoundLogger | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        if max_concurrent_reconciles < 1:
            raise ValueError(f"max_concurrent_reconciles must be >= 1, got {max_concurrent_reconciles}")
        self.name = name
        self.queue: WorkQueue[Request] = WorkQueue(name, rate_limiter=rate_limiter)
        self._reconciler = reconciler
        self._max_concurrent = max_concurrent_reconciles
        self._reconcile_timeout = reconcile_timeout
        self._cache_sync_timeout = cache_sync_timeout
        self.sync_period = sync_period
        self._sleep = sleep
        self._rng = rng or random.Random()
        base: FilteringBoundLogger = logger or structlog.get_logger("ome.framework.controller")
        self._log = base.bind(controller=name)
        self._metrics = ControllerMetrics(name)
        self._informers: list[Informer] = []
        self._primaries: list[PrimaryInformer] = []
        self._workers: list[asyncio.Task[None]] = []
        self._resync: asyncio.Task[None] | None = None
        self._started = False
        self._stopping = False
        self._stop_hooks: list[Callable[[], None]] = []

    def on_stop(self, hook: Callable[[], None]) -> None:
        """Call `hook` once the workers are stopped or aborted: work the reconciler started beside its
        passes (framework/write_behind.py) must not outlive them."""
        self._stop_hooks.append(hook)

    def _run_stop_hooks(self) -> None:
        for hook in self._stop_hooks:
            hook()

    # -- watches -----------------------------------------------------------------------------

    def watch(self, informer: Informer, handler: Handler, *predicates: Predicate) -> Controller:
        """Send `informer`'s events that pass every predicate to `handler`, which enqueues keys."""
        queue, log = self.queue, self._log

        def on_event(event_type: EventType, obj: Obj, old: Obj | None) -> None:
            try:
                for predicate in predicates:
                    if not predicate(event_type, obj, old):
                        return
                handler(event_type, obj, old, queue)
            except Exception:
                # A broken mapper must not take down the informer's dispatch to other watchers.
                log.exception("Event handler error", event_type=event_type)

        informer.add_handler(on_event)
        self._informers.append(informer)
        return self

    def for_(self, informer: PrimaryInformer, *predicates: Predicate) -> Controller:
        """Watch the primary resource: each event reconciles the object itself, as does each resync.

        An object with a generation its status has not observed is queued first (module docstring)."""
        self._primaries.append(informer)
        queue = self.queue

        def enqueue(event_type: EventType, obj: Obj, old: Obj | None, _: handlers.Enqueuer) -> None:
            urgent = event_type != "DELETED" and unobserved(obj)
            queue.add(handlers.request_for(obj), HIGH if urgent else NORMAL)

        return self.watch(informer, enqueue, *predicates)

    def owns(
        self,
        informer: Informer,
        owner_group: str,
        owner_kind: str,
        *predicates: Predicate,
        owner_namespaced: bool = True,
    ) -> Controller:
        """Watch children: each event reconciles the child's controller owner of that group/kind."""
        handler = handlers.enqueue_for_owner(owner_group, owner_kind, owner_namespaced=owner_namespaced)
        return self.watch(informer, handler, *predicates)

    def watches(
        self, informer: Informer, mapper: Callable[[Obj], Iterable[Request]], *predicates: Predicate
    ) -> Controller:
        """Watch anything: each event reconciles the keys `mapper` returns."""
        return self.watch(informer, handlers.enqueue_mapped(mapper), *predicates)

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Wait for the watched informers' first list, then start the workers and return."""
        if self._started:
            raise RuntimeError(f"controller {self.name!r} was already started")
        self._started = True
        self._log.info("Starting Controller")
        await self._wait_for_cache_sync()
        self._metrics.max_concurrent.set(self._max_concurrent)
        self._log.info("Starting workers", worker_count=self._max_concurrent)
        self._workers = [
            asyncio.create_task(self._worker(), name=f"controller-{self.name}-worker-{i}")
            for i in range(self._max_concurrent)
        ]
        if self.sync_period and self._primaries:
            self._resync = asyncio.create_task(self._resync_loop(), name=f"controller-{self.name}-resync")

    def abort(self) -> None:
        """Stop at once, without waiting: shut the queue and cancel every worker mid-reconcile.

        For a lost Lease: another replica may already be leading, so nothing here may keep acting.
        A reconcile that is cancelled between two writes is repaired by the next leader, since
        reconciles are level-triggered.
        """
        self._stopping = True
        self.queue.shutdown()
        for task in [*self._workers, *([self._resync] if self._resync else [])]:
            task.cancel()
        self._run_stop_hooks()

    async def stop(self, grace_period: float | None = 30.0) -> None:
        """Stop taking keys, let in-flight reconciles finish, cancel those still running after `grace_period`.

        Keys still queued are dropped: the next start lists everything again.
        """
        self._stopping = True
        self.queue.shutdown()
        if self._resync is not None:
            self._resync.cancel()
            await asyncio.gather(self._resync, return_exceptions=True)
            self._resync = None
        if not self._workers:
            self._run_stop_hooks()
            return
        self._log.info("Shutdown signal received, waiting for all workers to finish")
        _, pending = await asyncio.wait(self._workers, timeout=grace_period)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        self._workers = []
        self._run_stop_hooks()
        self._log.info("All workers finished")

    async def _wait_for_cache_sync(self) -> None:
        try:
            async with asyncio.timeout(self._cache_sync_timeout):
                # Polling, as client-go's WaitForCacheSync does: informers expose only a flag.
                while not all(informer.has_synced for informer in self._informers):  # noqa: ASYNC110
                    await asyncio.sleep(_SYNC_POLL_SECONDS)
        except TimeoutError:
            self._log.error("Could not wait for Cache to sync", timeout=self._cache_sync_timeout)
            raise TimeoutError(f"controller {self.name!r}: timed out waiting for caches to sync") from None

    async def _resync_loop(self) -> None:
        assert self.sync_period
        while not self._stopping:
            await self._sleep(self.sync_period * (1 - RESYNC_JITTER + 2 * RESYNC_JITTER * self._rng.random()))
            self.resync()

    def resync(self) -> int:
        """Enqueue every object the primary informers cache; returns how many keys were added."""
        count = 0
        for informer in self._primaries:
            for obj in informer.list():
                self.queue.add(handlers.request_for(obj))
                count += 1
        self._log.debug("Resync", objects=count)
        return count

    # -- workers -----------------------------------------------------------------------------

    async def _worker(self) -> None:
        structlog.contextvars.bind_contextvars(controller=self.name)  # this task's context only
        while not self._stopping:
            try:
                req = await self.queue.get()
            except ShutDown:
                return
            try:
                if not self._stopping:
                    await self._reconcile_handler(req)
            except Exception:
                # Bookkeeping failed (e.g. a logging processor raised); the worker must survive it.
                self._log.exception("Worker error", namespace=req.namespace, name=req.name)
            finally:
                self.queue.done(req)
            # get() and a cache-only reconcile may never suspend; without this a backlog of keys
            # would hold the event loop, starving watches and lease renewal, until it is empty.
            await asyncio.sleep(0)

    async def _reconcile_handler(self, req: Request) -> None:
        metrics = self._metrics
        tokens = structlog.contextvars.bind_contextvars(
            namespace=req.namespace, name=req.name, reconcile_id=uuid.uuid4().hex[:12]
        )
        metrics.active_workers.inc()
        started = time.monotonic()
        try:
            result = await self._call_reconciler(req)
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if self._stopping or (task is not None and task.cancelling()):
                raise  # the worker itself is being stopped
            # A reconciler awaited something that was cancelled under it: an error like any other.
            self._on_error(req, exc)
        except Exception as exc:
            self._on_error(req, exc)
        else:
            self._on_result(req, result)
        finally:
            metrics.reconcile_time.observe(time.monotonic() - started)
            metrics.active_workers.dec()
            structlog.contextvars.reset_contextvars(**tokens)

    async def _call_reconciler(self, req: Request) -> Result:
        if self._reconcile_timeout is None:
            return await self._reconciler.reconcile(req)
        deadline = asyncio.timeout(self._reconcile_timeout)
        try:
            async with deadline:
                return await self._reconciler.reconcile(req)
        except TimeoutError:
            if deadline.expired():
                self._metrics.timeouts.inc()
            raise

    def _on_result(self, req: Request, result: Result) -> None:
        if result.requeue_after is not None and result.requeue_after > 0:
            self.queue.forget(req)
            self.queue.add_after(req, result.requeue_after)
            self._metrics.requeue_after.inc()
            return
        self.queue.forget(req)
        self._metrics.success.inc()

    def _on_error(self, req: Request, exc: BaseException) -> None:
        metrics = self._metrics
        if getattr(exc, "requeue_after", None):
            self._log.warning(
                "Reconciler returned both a result and an error; the requeue_after is ignored "
                "and the error causes requeuing with exponential backoff"
            )
        if _is_terminal(exc):
            metrics.terminal_errors.inc()
        else:
            self.queue.add_rate_limited(req)
        if isinstance(exc, _PANIC_TYPES):
            metrics.panics.inc()
        metrics.errors.inc()
        metrics.total_errors.inc()
        if isinstance(exc, errors.Conflict):
            # Someone else wrote first: expected under concurrency, retried from a fresh cache read.
            self._log.info("Reconcile hit a conflict; requeued", error=str(exc))
        elif isinstance(exc, errors.ApiError | TerminalError | RetryError):
            self._log.error("Reconciler error", error=str(exc), error_type=type(exc).__name__)
        else:  # anything else is a bug in a reconciler: keep the traceback
            self._log.error("Reconciler error", exc_info=exc)
        clear_failed_frames(exc)  # logged and requeued: the pass's objects can go now


def unobserved(obj: Obj) -> bool:
    """Whether `metadata.generation` is ahead of `status.observedGeneration` (absent counts as 0)."""
    generation = (obj.get("metadata") or {}).get("generation")
    status = obj.get("status")
    observed = status.get("observedGeneration") if isinstance(status, dict) else None
    try:
        return int(generation or 0) > int(observed or 0)
    except (TypeError, ValueError):
        return False


def _is_terminal(exc: BaseException) -> bool:
    """True if `exc` or anything in its cause chain is a TerminalError (Go's errors.Is)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, TerminalError):
            return True
        seen.add(id(current))
        current = current.__cause__
    return False
