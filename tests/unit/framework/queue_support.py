"""Shared by the work queue tests."""

from __future__ import annotations

from ome.framework.workqueue import WorkQueue


async def drain(queue: WorkQueue[str]) -> list[str]:
    """Get and finish everything queued right now, in the order handed out."""
    items = []
    while len(queue):
        item = await queue.get()
        items.append(item)
        queue.done(item)
    return items
