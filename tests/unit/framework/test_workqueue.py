from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Hashable

import pytest
from prometheus_client import REGISTRY

from ome.framework.workqueue import ShutDown, WorkQueue
from tests.unit.framework.queue_support import drain


def _name() -> str:
    return f"test-{uuid.uuid4().hex[:8]}"


async def test_adds_of_a_waiting_item_are_merged_and_order_is_fifo() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for item in ["a", "b", "a", "c", "b"]:
        queue.add(item)
    assert len(queue) == 3
    assert await drain(queue) == ["a", "b", "c"]


async def test_item_added_while_processing_is_queued_only_after_done() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    item = await queue.get()
    queue.add("a")
    queue.add("a")
    assert len(queue) == 0, "a key being processed must not be handed to a second worker"
    queue.done(item)
    assert len(queue) == 1
    assert await drain(queue) == ["a"], "re-added during processing: runs exactly once more"
    assert len(queue) == 0


async def test_get_waits_for_an_add() -> None:
    queue: WorkQueue[str] = WorkQueue()
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0.01)
    assert not getter.done()
    queue.add("a")
    assert await asyncio.wait_for(getter, 1) == "a"


async def test_wake_up_for_a_cancelled_getter_passes_to_another() -> None:
    queue: WorkQueue[str] = WorkQueue()
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.add("a")  # wakes `first`...
    first.cancel()  # ...which is cancelled before it runs
    assert await asyncio.wait_for(second, 1) == "a"


async def test_workers_never_process_one_key_concurrently() -> None:
    queue: WorkQueue[str] = WorkQueue()
    keys = [f"k{i}" for i in range(5)]
    in_flight: set[str] = set()
    processed: list[str] = []
    overlaps: list[str] = []
    max_parallel = 0

    async def worker() -> None:
        nonlocal max_parallel
        while True:
            try:
                item = await queue.get()
            except ShutDown:
                return
            if item in in_flight:
                overlaps.append(item)
            in_flight.add(item)
            max_parallel = max(max_parallel, len(in_flight))
            await asyncio.sleep(random.random() / 1000)
            in_flight.discard(item)
            processed.append(item)
            queue.done(item)

    workers = [asyncio.create_task(worker()) for _ in range(4)]
    rng = random.Random(7)
    for _ in range(300):
        queue.add(rng.choice(keys))
        if rng.random() < 0.5:
            await asyncio.sleep(0)
    await asyncio.sleep(0.05)
    queue.shutdown()
    await asyncio.gather(*workers)
    assert overlaps == []
    assert max_parallel > 1, "distinct keys should be processed in parallel"
    assert set(processed) == set(keys)


async def test_shutdown_hands_out_queued_items_then_raises_and_ignores_adds() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    queue.shutdown()
    queue.add("b")
    assert queue.shutting_down
    assert await queue.get() == "a"
    with pytest.raises(ShutDown):
        await queue.get()


async def test_shutdown_wakes_waiting_getters() -> None:
    queue: WorkQueue[str] = WorkQueue()
    getter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.shutdown()
    with pytest.raises(ShutDown):
        await asyncio.wait_for(getter, 1)


async def test_add_after_releases_items_in_deadline_order() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add_after("a", 0.06)
    queue.add_after("b", 0.02)
    queue.add_after("c", 0.04)
    assert len(queue) == 0
    got = []
    for _ in range(3):
        item = await asyncio.wait_for(queue.get(), 1)
        got.append(item)
        queue.done(item)
    assert got == ["b", "c", "a"]


async def test_add_after_keeps_the_earlier_deadline_of_a_waiting_item() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add_after("a", 0.3)
    queue.add_after("a", 0.01)  # earlier: replaces
    queue.add_after("a", 5.0)  # later: ignored
    loop = asyncio.get_running_loop()
    started = loop.time()
    item = await asyncio.wait_for(queue.get(), 1)
    assert loop.time() - started < 0.2
    queue.done(item)
    await asyncio.sleep(0.35)
    assert len(queue) == 0, "the superseded deadline must not add the item a second time"
    queue.shutdown()


async def test_add_after_without_delay_adds_now() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add_after("a", 0)
    queue.add_after("b", -1)
    assert len(queue) == 2


async def test_shutdown_drops_delayed_items() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add_after("a", 0.01)
    queue.shutdown()
    await asyncio.sleep(0.03)
    assert len(queue) == 0


class _FixedLimiter:
    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        self.failures[item] = self.failures.get(item, 0) + 1
        return self.delay

    def forget(self, item: Hashable) -> None:
        self.failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self.failures.get(item, 0)


async def test_add_rate_limited_waits_the_limiter_delay_and_forget_resets() -> None:
    limiter = _FixedLimiter(0.03)
    queue: WorkQueue[str] = WorkQueue(rate_limiter=limiter)
    queue.add_rate_limited("a")
    queue.add_rate_limited("a")
    assert queue.num_requeues("a") == 2
    await asyncio.sleep(0.01)
    assert len(queue) == 0
    assert await asyncio.wait_for(queue.get(), 1) == "a"
    queue.forget("a")
    assert queue.num_requeues("a") == 0


def _sample(metric: str, name: str) -> float:
    value = REGISTRY.get_sample_value(metric, {"name": name})
    assert value is not None, metric
    return value


async def test_metrics_follow_adds_gets_and_retries() -> None:
    name = _name()
    queue: WorkQueue[str] = WorkQueue(name)
    queue.add("a")
    queue.add("a")
    queue.add("b")
    assert _sample("workqueue_adds_total", name) == 2
    assert _sample("workqueue_depth", name) == 2
    item = await queue.get()
    assert _sample("workqueue_depth", name) == 1
    assert _sample("workqueue_queue_duration_seconds_count", name) == 1
    await asyncio.sleep(0.01)
    assert _sample("workqueue_longest_running_processor_seconds", name) >= 0.01
    assert _sample("workqueue_unfinished_work_seconds", name) >= 0.01
    queue.done(item)
    assert _sample("workqueue_work_duration_seconds_count", name) == 1
    assert _sample("workqueue_work_duration_seconds_sum", name) >= 0.01
    assert _sample("workqueue_longest_running_processor_seconds", name) == 0
    queue.add_rate_limited("c")
    assert _sample("workqueue_retries_total", name) == 1
    queue.shutdown()


async def test_unnamed_queue_records_no_metrics() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    assert REGISTRY.get_sample_value("workqueue_adds_total", {"name": ""}) is None
