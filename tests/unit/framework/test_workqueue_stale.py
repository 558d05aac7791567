"""Stale NORMAL entries (left by raises to HIGH) stay bounded while HIGH items keep the NORMAL deque from
being walked, as under steady churn on a saturated queue (bench/bench_soak.py); order is unchanged."""

from __future__ import annotations

from ome.framework.workqueue import HIGH, NORMAL, WorkQueue


async def test_stale_normal_entries_do_not_pile_up_while_high_items_keep_coming() -> None:
    queue: WorkQueue[str] = WorkQueue()
    keys = [f"k{i}" for i in range(10)]
    for key in keys:
        queue.add(key)
    for turn in range(5000):
        queue.add(keys[turn % len(keys)], HIGH)  # a spec change raises a waiting key
        item = await queue.get()  # HIGH first: the NORMAL deque is never walked
        queue.done(item)
        queue.add(item)  # its children's events queue it again at NORMAL
    assert len(queue) == len(keys)
    held = len(queue._queues[NORMAL])
    assert held <= 2 * len(keys) + 64 + 1, f"{held} NORMAL entries for {len(keys)} queued keys"
    handed = []
    while len(queue):
        item = await queue.get()
        handed.append(item)
        queue.done(item)
    assert sorted(handed) == sorted(keys), "each waiting key handed out exactly once"


async def test_compaction_keeps_fifo_order_and_hands_each_key_out_once() -> None:
    queue: WorkQueue[int] = WorkQueue()
    for key in range(100):
        queue.add(key)
    # Raise every odd key, hand it out and queue it again at NORMAL, 500 times: past the slack, so the
    # NORMAL deque is compacted several times while the even keys wait in it.
    for _ in range(10):
        for key in range(1, 100, 2):
            queue.add(key, HIGH)
            assert await queue.get() == key
            queue.done(key)
            queue.add(key)
    handed = []
    while len(queue):
        item = await queue.get()
        handed.append(item)
        queue.done(item)
    assert sorted(handed) == list(range(100)), "each waiting key handed out exactly once"
    assert [k for k in handed if k % 2 == 0] == list(range(0, 100, 2)), "FIFO among keys never raised"
