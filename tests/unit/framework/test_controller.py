from __future__ import annotations

import asyncio
import functools
import gc
import random
import uuid
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import structlog
from prometheus_client import REGISTRY

from ome.framework import predicates, ratelimit
from ome.framework.controller import Controller
from ome.framework.handlers import EventType, Obj
from ome.framework.reconcile import Request, Result, TerminalError, reconciler_from

FAST_RETRY = ratelimit.ItemExponentialFailureRateLimiter(base=0.001, max_delay=0.01)


class FakeInformer:
    def __init__(self, *, synced: bool = True) -> None:
        self.handlers: list[Callable[[EventType, Obj, Obj | None], None]] = []
        self.has_synced = synced

    def add_handler(self, fn: Callable[[EventType, Obj, Obj | None], None]) -> None:
        self.handlers.append(fn)

    def emit(self, event_type: EventType, obj: Obj, old: Obj | None = None) -> None:
        for fn in self.handlers:
            fn(event_type, obj, old)


def obj(name: str, namespace: str = "ns", generation: int = 1) -> Obj:
    return {"metadata": {"name": name, "namespace": namespace, "generation": generation}}


def metric(name: str, controller: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, {"controller": controller, **labels}) or 0.0


class Recorder:
    """A reconciler whose behaviour per call is scripted; records calls and their times."""

    def __init__(self, script: Callable[[Request, int], Awaitable[Result]] | None = None) -> None:
        self.calls: list[Request] = []
        self.times: list[float] = []
        self.called = asyncio.Event()
        self._script = script

    async def reconcile(self, req: Request) -> Result:
        self.calls.append(req)
        self.times.append(asyncio.get_running_loop().time())
        self.called.set()
        if self._script is not None:
            return await self._script(req, len(self.calls))
        return Result()

    async def wait_calls(self, n: int, within: float = 2.0) -> None:
        await self.wait_until(lambda: len(self.calls) >= n, within)

    async def wait_until(self, done: Callable[[], bool], within: float = 2.0) -> None:
        async with asyncio.timeout(within):
            while not done():
                self.called.clear()
                await self.called.wait()


@pytest.fixture
async def make() -> AsyncIterator[Callable[..., Controller]]:
    made: list[Controller] = []

    def factory(reconciler: Any, **kwargs: Any) -> Controller:
        kwargs.setdefault("rate_limiter", FAST_RETRY)
        ctrl = Controller(f"test-{uuid.uuid4().hex[:8]}", reconciler, **kwargs)
        made.append(ctrl)
        return ctrl

    yield factory
    for ctrl in made:
        await ctrl.stop(grace_period=1)


async def test_error_is_retried_with_backoff_until_success_and_counted(
    make: Callable[..., Controller],
) -> None:
    async def fail_twice(req: Request, call: int) -> Result:
        if call <= 2:
            raise RuntimeError("boom")
        return Result()

    rec = Recorder(fail_twice)
    limiter = ratelimit.ItemExponentialFailureRateLimiter(base=0.02, max_delay=1.0)
    informer = FakeInformer()
    ctrl = make(rec, rate_limiter=limiter).for_(informer)
    await ctrl.start()
    informer.emit("ADDED", obj("a"))
    await rec.wait_calls(3)
    gaps = [later - earlier for earlier, later in zip(rec.times, rec.times[1:], strict=False)]
    assert gaps[0] >= 0.015 and gaps[1] >= 0.035, f"backoff 20 ms then 40 ms expected, got {gaps}"
    await asyncio.sleep(0.05)
    assert len(rec.calls) == 3
    assert ctrl.queue.num_requeues(Request("ns", "a")) == 0, "success must forget the backoff"
    assert metric("controller_runtime_reconcile_errors_total", ctrl.name) == 2
    assert metric("controller_runtime_reconcile_total", ctrl.name, result="error") == 2
    assert metric("controller_runtime_reconcile_total", ctrl.name, result="success") == 1
    assert metric("controller_runtime_reconcile_time_seconds_count", ctrl.name) == 3


async def test_terminal_error_is_counted_but_not_retried(make: Callable[..., Controller]) -> None:
    async def terminal(req: Request, call: int) -> Result:
        raise TerminalError("spec is invalid")

    rec = Recorder(terminal)
    informer = FakeInformer()
    ctrl = make(rec).for_(informer)
    await ctrl.start()
    informer.emit("ADDED", obj("a"))
    await rec.wait_calls(1)
    await asyncio.sleep(0.05)
    assert len(rec.calls) == 1
    assert metric("controller_runtime_terminal_reconcile_errors_total", ctrl.name) == 1
    assert metric("controller_runtime_reconcile_errors_total", ctrl.name) == 1


async def test_terminal_error_as_cause_is_terminal(make: Callable[..., Controller]) -> None:
    async def wrapped(req: Request, call: int) -> Result:
        raise RuntimeError("wrapped") from TerminalError("root")

    rec = Recorder(wrapped)
    informer = FakeInformer()
    ctrl = make(rec).for_(informer)
    await ctrl.start()
    informer.emit("ADDED", obj("a"))
    await rec.wait_calls(1)
    await asyncio.sleep(0.05)
    assert len(rec.calls) == 1


async def test_requeue_after_reconciles_again_after_the_delay(make: Callable[..., Controller]) -> None:
    async def poll_once(req: Request, call: int) -> Result:
        return Result(requeue_after=0.05) if call == 1 else Result()

    rec = Recorder(poll_once)
    informer = FakeInformer()
    ctrl = make(rec).for_(informer)
    await ctrl.start()
    informer.emit("ADDED", obj("a"))
    await rec.wait_calls(2)
    assert rec.times[1] - rec.times[0] >= 0.045
    assert metric("controller_runtime_reconcile_total", ctrl.name, result="requeue_after") == 1
    await asyncio.sleep(0.08)
    assert len(rec.calls) == 2


async def test_requeue_after_resets_the_error_backoff(make: Callable[..., Controller]) -> None:
    async def fail_then_poll(req: Request, call: int) -> Result:
        if call == 1:
            raise RuntimeError("boom")
        return Result(requeue_after=10) if call == 2 else Result()

    rec = Recorder(fail_then_poll)
    informer = FakeInformer()
    ctrl = make(rec).for_(informer)
    await ctrl.start()
    informer.emit("ADDED", obj("a"))
    await rec.wait_calls(2)
    await asyncio.sleep(0.01)
    assert ctrl.queue.num_requeues(Request("ns", "a")) == 0


async def test_error_carrying_requeue_after_is_still_rate_limited(make: Callable[..., Controller]) -> None:
    class PollError(Exception):
        requeue_after = 60.0

    async def fail_once(req: Request, call: int) -> Result:
        if call == 1:
            raise PollError
        return Result()

    rec = Recorder(fail_once)
    informer = FakeInformer()
    ctrl = make(rec).for_(informer)
    await ctrl.start()
    informer.emit("ADDED", obj("a"))
    await rec.wait_calls(2, within=1.0)  # would take 60 s if requeue_after were honoured


async def test_same_key_is_never_reconciled_concurrently_while_distinct_keys_are(
    make: Callable[..., Controller],
) -> None:
    """Driven by events, not time: each reconcile holds until the test lets it finish."""
    in_flight: list[str] = []
    overlaps: list[str] = []
    peak = 0
    release = asyncio.Event()
    all_started = asyncio.Event()

    async def held(req: Request, call: int) -> Result:
        nonlocal peak
        if req.name in in_flight:
            overlaps.append(req.name)
        in_flight.append(req.name)
        peak = max(peak, len(in_flight))
        if len(in_flight) == 4:
            all_started.set()
        await release.wait()
        in_flight.remove(req.name)
        return Result()

    rec = Recorder(held)
    informer = FakeInformer()
    ctrl = make(rec, max_concurrent_reconciles=4).for_(informer)
    await ctrl.start()
    assert metric("controller_runtime_max_concurrent_reconciles", ctrl.name) == 4
    for name in ["a", "b", "c", "d"]:
        informer.emit("ADDED", obj(name))
    await asyncio.wait_for(all_started.wait(), 5)
    assert metric("controller_runtime_active_workers", ctrl.name) == 4
    for _ in range(5):  # "a" changes again while it is being reconciled
        informer.emit("MODIFIED", obj("a", generation=2), obj("a"))
    assert len(ctrl.queue) == 0, "a key being processed is not queued again until done"
    release.set()
    await rec.wait_calls(5)
    await ctrl.stop(grace_period=5)  # drains: nothing else may run "a"
    assert overlaps == []
    assert peak == 4
    assert [r.name for r in rec.calls].count("a") == 2, "merged re-adds: exactly one more run"


async def test_start_waits_for_cache_sync_before_reconciling(make: Callable[..., Controller]) -> None:
    rec = Recorder()
    informer = FakeInformer(synced=False)
    ctrl = make(rec).for_(informer)
    informer.emit("ADDED", obj("a"))  # before start: buffered in the queue
    starting = asyncio.create_task(ctrl.start())
    await asyncio.sleep(0.08)
    assert not starting.done() and rec.calls == []
    informer.has_synced = True
    await asyncio.wait_for(starting, 1)
    await rec.wait_calls(1)


async def test_start_fails_when_caches_do_not_sync(make: Callable[..., Controller]) -> None:
    ctrl = make(Recorder(), cache_sync_timeout=0.1).for_(FakeInformer(synced=False))
    with pytest.raises(TimeoutError):
        await ctrl.start()


async def test_exceptions_never_kill_the_worker_and_bugs_count_as_panics(
    make: Callable[..., Controller],
) -> None:
    async def buggy(req: Request, call: int) -> Result:
        if req.name == "bad":
            raise KeyError("spec")
        return Result()

    rec = Recorder(buggy)
    informer = FakeInformer()
    ctrl = make(rec, max_concurrent_reconciles=1).for_(informer)
    await ctrl.start()
    informer.emit("ADDED", obj("bad"))
    informer.emit("ADDED", obj("good"))
    await rec.wait_until(lambda: Request("ns", "good") in rec.calls)
    assert metric("controller_runtime_reconcile_panics_total", ctrl.name) >= 1


async def test_reconcile_timeout_cancels_and_retries(make: Callable[..., Controller]) -> None:
    async def hang_once(req: Request, call: int) -> Result:
        if call == 1:
            await asyncio.sleep(10)
        return Result()

    rec = Recorder(hang_once)
    informer = FakeInformer()
    ctrl = make(rec, reconcile_timeout=0.03).for_(informer)
    await ctrl.start()
    informer.emit("ADDED", obj("a"))
    await rec.wait_calls(2)
    assert metric("controller_runtime_reconcile_timeouts_total", ctrl.name) == 1
    assert metric("controller_runtime_reconcile_errors_total", ctrl.name) == 1


async def test_reconciler_logs_carry_controller_key_and_reconcile_id(make: Callable[..., Controller]) -> None:
    seen: list[dict[str, Any]] = []

    async def capture(req: Request, call: int) -> Result:
        seen.append(structlog.contextvars.get_contextvars())
        return Result()

    rec = Recorder(capture)
    informer = FakeInformer()
    ctrl = make(rec).for_(informer)
    await ctrl.start()
    informer.emit("ADDED", obj("a"))
    informer.emit("ADDED", obj("b"))
    await rec.wait_calls(2)
    assert seen[0]["controller"] == ctrl.name
    assert (seen[0]["namespace"], seen[0]["name"]) == ("ns", "a")
    assert seen[1]["name"] == "b"
    assert seen[0]["reconcile_id"] != seen[1]["reconcile_id"]
    assert "name" not in structlog.contextvars.get_contextvars(), "context must not leak to the caller"


async def test_predicates_filter_events_before_the_handler(make: Callable[..., Controller]) -> None:
    rec = Recorder()
    informer = FakeInformer()
    ctrl = make(rec).for_(informer, predicates.generation_changed)
    informer.emit("MODIFIED", obj("status-only", generation=1), obj("status-only", generation=1))
    informer.emit("MODIFIED", obj("spec", generation=2), obj("spec", generation=1))
    assert len(ctrl.queue) == 1
    assert await ctrl.queue.get() == Request("ns", "spec")


async def test_handler_errors_do_not_reach_the_informer(make: Callable[..., Controller]) -> None:
    def broken(o: Obj) -> list[Request]:
        raise ValueError("bad mapper")

    informer = FakeInformer()
    ctrl = make(Recorder()).watches(informer, broken)
    informer.emit("ADDED", obj("a"))
    assert len(ctrl.queue) == 0


async def test_owns_maps_children_to_their_controller_owner(make: Callable[..., Controller]) -> None:
    rec = Recorder()
    children = FakeInformer()
    ctrl = make(rec).owns(children, "ome.io", "InferenceService")
    child = obj("pod-1")
    child["metadata"]["ownerReferences"] = [
        {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "name": "llm", "controller": True}
    ]
    children.emit("ADDED", child)
    assert await ctrl.queue.get() == Request("ns", "llm")


async def test_stop_lets_the_running_reconcile_finish(make: Callable[..., Controller]) -> None:
    finished: list[str] = []

    async def slow(req: Request, call: int) -> Result:
        await asyncio.sleep(0.05)
        finished.append(req.name)
        return Result()

    rec = Recorder(slow)
    informer = FakeInformer()
    ctrl = make(rec).for_(informer)
    await ctrl.start()
    informer.emit("ADDED", obj("a"))
    informer.emit("ADDED", obj("b"))
    await rec.wait_calls(1)
    await ctrl.stop(grace_period=1)
    assert finished == ["a"], "in-flight work completes; queued keys are dropped"


async def test_stop_cancels_reconciles_past_the_grace_period(make: Callable[..., Controller]) -> None:
    async def hang(req: Request, call: int) -> Result:
        await asyncio.sleep(10)
        return Result()

    rec = Recorder(hang)
    informer = FakeInformer()
    ctrl = make(rec).for_(informer)
    await ctrl.start()
    informer.emit("ADDED", obj("a"))
    await rec.wait_calls(1)
    await asyncio.wait_for(ctrl.stop(grace_period=0.05), 1)


async def test_reconciler_from_wraps_a_coroutine_function() -> None:
    async def fn(req: Request) -> Result:
        return Result(requeue_after=float(len(req.name)))

    assert await reconciler_from(fn).reconcile(Request("ns", "abc")) == Result(requeue_after=3.0)
    assert str(Request("ns", "abc")) == "ns/abc" and str(Request("", "node")) == "node"


async def test_a_backlog_of_cache_only_reconciles_does_not_hold_the_event_loop(
    make: Callable[..., Controller],
) -> None:
    ticks = 0
    ticks_seen: list[int] = []

    async def cache_only(req: Request, call: int) -> Result:
        ticks_seen.append(ticks)  # never awaits, like a reconcile that finds nothing to do
        return Result()

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    rec = Recorder(cache_only)
    informer = FakeInformer()
    ctrl = make(rec).for_(informer)
    await ctrl.start()
    for i in range(50):
        informer.emit("ADDED", obj(f"o{i}"))
    tick_task = asyncio.create_task(ticker())
    try:
        await rec.wait_calls(50)
    finally:
        tick_task.cancel()
    assert ticks_seen[-1] > 10, "other tasks must run between reconciles"


async def test_a_cancelled_error_from_the_reconciler_is_an_error_and_the_worker_survives(
    make: Callable[..., Controller],
) -> None:
    """With one worker, a CancelledError escaping a reconcile used to end the controller for good."""

    async def cancelled_once(req: Request, call: int) -> Result:
        if call == 1:
            raise asyncio.CancelledError()  # e.g. awaiting a task that someone else cancelled
        return Result()

    rec = Recorder(cancelled_once)
    informer = FakeInformer()
    ctrl = make(rec, max_concurrent_reconciles=1).for_(informer)
    await ctrl.start()
    informer.emit("ADDED", obj("a"))
    await rec.wait_calls(2)  # retried with backoff by the same, still living, worker
    informer.emit("ADDED", obj("b"))
    await rec.wait_until(lambda: Request("ns", "b") in rec.calls)
    assert metric("controller_runtime_reconcile_errors_total", ctrl.name) == 1
    assert metric("controller_runtime_reconcile_total", ctrl.name, result="error") == 1
    assert all(not worker.done() for worker in ctrl._workers)  # noqa: SLF001


async def test_stop_still_cancels_a_worker_stuck_in_a_reconcile(make: Callable[..., Controller]) -> None:
    entered = asyncio.Event()

    async def forever(req: Request, call: int) -> Result:
        entered.set()
        await asyncio.Event().wait()
        return Result()

    rec = Recorder(forever)
    informer = FakeInformer()
    ctrl = make(rec).for_(informer)
    await ctrl.start()
    informer.emit("ADDED", obj("a"))
    await entered.wait()
    await ctrl.stop(grace_period=0)
    assert all(worker.done() for worker in ctrl._workers) or ctrl._workers == []  # noqa: SLF001
    assert metric("controller_runtime_reconcile_errors_total", ctrl.name) == 0


async def test_abort_shuts_the_queue_and_cancels_running_reconciles_at_once(
    make: Callable[..., Controller],
) -> None:
    entered = asyncio.Event()
    cancelled = asyncio.Event()

    async def long(req: Request, call: int) -> Result:
        entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return Result()

    rec = Recorder(long)
    informer = FakeInformer()
    ctrl = make(rec, max_concurrent_reconciles=2).for_(informer)
    await ctrl.start()
    informer.emit("ADDED", obj("a"))
    await entered.wait()
    ctrl.abort()  # synchronous: nothing else runs in between
    assert ctrl.queue.shutting_down
    informer.emit("ADDED", obj("b"))
    assert len(ctrl.queue) == 0, "a stopped controller takes no new keys"
    await asyncio.wait_for(cancelled.wait(), 5)
    assert rec.calls == [Request("ns", "a")]


class ListingInformer(FakeInformer):
    def __init__(self, objects: list[Obj]) -> None:
        super().__init__()
        self.objects = objects

    def list(self) -> list[Obj]:
        return self.objects


class SteppedSleep:
    """An injected sleep: records each requested delay and returns when the test says so."""

    def __init__(self) -> None:
        self.delays: list[float] = []
        self._wake: asyncio.Queue[None] = asyncio.Queue()
        self.waiting = asyncio.Event()

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        self.waiting.set()
        await self._wake.get()
        self.waiting.clear()

    async def fire(self) -> None:
        await asyncio.wait_for(self.waiting.wait(), 5)
        self._wake.put_nowait(None)


async def test_sync_period_re_enqueues_every_cached_primary_past_its_predicates(
    make: Callable[..., Controller],
) -> None:
    sleep = SteppedSleep()
    rng = random.Random(7)
    primaries = ListingInformer([obj("a"), obj("b", namespace="other")])
    children = ListingInformer([obj("child")])
    rec = Recorder()
    ctrl = make(rec, sync_period=36_000.0, sleep=sleep, rng=rng)
    ctrl.for_(primaries, predicates.generation_changed).watches(children, lambda o: [])
    await ctrl.start()
    await sleep.fire()  # the first period ends
    await rec.wait_calls(2)
    assert sorted(rec.calls, key=str) == [Request("ns", "a"), Request("other", "b")]
    await sleep.fire()
    await rec.wait_calls(4)
    expected = random.Random(7)
    assert sleep.delays[:2] == [36_000.0 * (0.9 + 0.2 * expected.random()) for _ in range(2)]
    assert all(32_400.0 <= d < 39_600.0 for d in sleep.delays), "jittered within [0.9, 1.1) of the period"


async def test_no_sync_period_means_no_resync(make: Callable[..., Controller]) -> None:
    sleep = SteppedSleep()
    ctrl = make(Recorder(), sleep=sleep).for_(ListingInformer([obj("a")]))
    await ctrl.start()
    await asyncio.sleep(0)
    assert sleep.delays == []


async def test_a_failed_pass_frees_what_its_frames_held_without_the_collector(
    make: Callable[..., Controller],
) -> None:
    """A reconcile whose frame holds the error it raises (a gather's result list) forms a cycle with its
    traceback; the controller clears the frames once the error is handled, so the pass's objects go at
    once rather than at the next full collection."""
    held: list[weakref.ref[Any]] = []

    class Rendered:
        pass

    async def conflict(req: Request, call: int) -> Result:
        rendered = Rendered()
        held.append(weakref.ref(rendered))
        results: list[BaseException] = [RuntimeError("409")]
        raise results[0]

    rec = Recorder(conflict)
    informer = FakeInformer()
    ctrl = make(rec, rate_limiter=ratelimit.ItemExponentialFailureRateLimiter(base=60, max_delay=60))
    ctrl.for_(informer)
    gc.collect()
    gc.disable()
    try:
        await ctrl.start()
        informer.emit("ADDED", obj("a"))
        await rec.wait_calls(1)
        for _ in range(100):
            if metric("controller_runtime_reconcile_errors_total", ctrl.name) == 1:
                break
            await asyncio.sleep(0)
        assert metric("controller_runtime_reconcile_errors_total", ctrl.name) == 1
        assert held[0]() is None, "the failed pass's objects outlived its handling"
    finally:
        gc.enable()


async def test_stop_hooks_run_once_the_workers_are_stopped_or_aborted(make: Callable[..., Controller]) -> None:
    """What a reconciler left running beside its passes (write-behind creates) must not outlive them."""
    async def quick(req: Request, call: int) -> Result:
        return Result()

    for how in ("stop", "abort"):
        ran: list[str] = []
        ctrl = make(Recorder(quick)).for_(FakeInformer())
        ctrl.on_stop(functools.partial(ran.append, how))
        await ctrl.start()
        assert ran == []
        if how == "stop":
            await ctrl.stop(grace_period=1)
        else:
            ctrl.abort()
        assert ran == [how]
