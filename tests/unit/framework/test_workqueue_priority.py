"""The work queue's two priorities: HIGH items first, a waiting item raised, never handed out twice."""

from __future__ import annotations

import pytest

from ome.framework.workqueue import HIGH, NORMAL, WorkQueue
from tests.unit.framework.queue_support import drain


async def test_high_items_are_handed_out_before_normal_ones_fifo_within_each() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("n1")
    queue.add("h1", HIGH)
    queue.add("n2", NORMAL)
    queue.add("h2", HIGH)
    assert len(queue) == 4
    assert await drain(queue) == ["h1", "h2", "n1", "n2"]


async def test_a_waiting_normal_item_added_at_high_is_raised_and_handed_out_once() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for item in ("a", "b", "c"):
        queue.add(item)
    queue.add("c", HIGH)
    queue.add("c", HIGH)  # already raised: nothing more
    assert len(queue) == 3, "a raise must not count the item twice"
    assert await drain(queue) == ["c", "a", "b"], "the stale NORMAL entry of c is skipped"


async def test_a_high_item_is_not_lowered_by_a_normal_add() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    queue.add("b", HIGH)
    queue.add("b")
    assert await drain(queue) == ["b", "a"]


@pytest.mark.parametrize(("raised", "order"), [(True, ["busy", "other"]), (False, ["other", "busy"])])
async def test_an_add_while_processing_queues_the_item_after_done(raised: bool, order: list[str]) -> None:
    """Re-added while a worker has it: queued once after done(), at HIGH only when raised."""
    queue: WorkQueue[str] = WorkQueue()
    queue.add("busy")
    item = await queue.get()
    queue.add("other")
    queue.add("busy")
    if raised:
        queue.add("busy", HIGH)
    assert len(queue) == 1, "a key being processed is not handed to a second worker"
    queue.done(item)
    assert await drain(queue) == order


async def test_a_raised_item_handed_out_and_added_again_is_not_handed_out_twice() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    queue.add("b")
    queue.add("a", HIGH)  # a's NORMAL entry is stale, ahead of b
    first = await queue.get()
    queue.done(first)
    queue.add("a")  # a new NORMAL entry behind b; the stale one ahead of b may serve it
    assert first == "a"
    handed = await drain(queue)
    assert sorted(handed) == ["a", "b"], "each waiting item exactly once"
    assert len(queue) == 0


async def test_shutdown_still_hands_out_both_priorities() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("n")
    queue.add("h", HIGH)
    queue.shutdown()
    queue.add("late", HIGH)
    assert await drain(queue) == ["h", "n"]
