"""Work-queue throughput: add + get + done cycles per second, with metrics on.

Two shapes: a tight single-worker loop (pure queue cost), and 4 workers fed by a
producer task (adds the cost of waking waiting getters). Target: >= 100k ops/s.
"""

from __future__ import annotations

import asyncio
import time

from ome.framework.workqueue import ShutDown, WorkQueue

N = 200_000


async def tight_loop(n: int) -> float:
    queue: WorkQueue[str] = WorkQueue("bench-tight")
    keys = [f"ns/obj-{i % 1000}" for i in range(n)]
    start = time.perf_counter()
    for key in keys:
        queue.add(key)
        item = await queue.get()
        queue.done(item)
    return n / (time.perf_counter() - start)


async def workers(n: int, concurrency: int = 4) -> float:
    queue: WorkQueue[str] = WorkQueue("bench-workers")
    processed = 0

    async def worker() -> None:
        nonlocal processed
        while True:
            try:
                item = await queue.get()
            except ShutDown:
                return
            processed += 1
            queue.done(item)

    async def producer() -> None:
        for i in range(n):
            queue.add(f"ns/obj-{i}")
            if i % 100 == 0:
                await asyncio.sleep(0)  # let workers run, as informer events would
        queue.shutdown()  # workers still get what is queued, then ShutDown

    start = time.perf_counter()
    tasks = [asyncio.create_task(worker()) for _ in range(concurrency)]
    await producer()
    await asyncio.gather(*tasks)
    assert processed == n, processed
    return n / (time.perf_counter() - start)


async def main() -> None:
    await tight_loop(10_000)  # warm up
    tight = sorted([await tight_loop(N) for _ in range(3)])[1]
    fanned = sorted([await workers(N) for _ in range(3)])[1]
    print(f"queue add+get+done, 1 worker tight loop: {tight:,.0f} ops/s (median of 3, N={N:,})")
    print(f"queue add+get+done, 4 workers + producer: {fanned:,.0f} ops/s (median of 3, N={N:,})")


if __name__ == "__main__":
    asyncio.run(main())
