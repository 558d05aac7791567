"""A watch of one resource in a namespace running beside a test's steps, from a list taken as it starts."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from ome.framework.client import Client
from ome.framework.resources import Resource

Obj = dict[str, Any]


@contextlib.asynccontextmanager
async def watching(
    client: Client, res: Resource, ns: str, seen: Callable[[str, Obj], None]
) -> AsyncIterator[list[Obj]]:
    """Lists `res` in `ns` (the block gets the items), then hands each later ADDED, MODIFIED and DELETED
    event to `seen` until the block ends. `seen` gets no event before the block's first await."""
    items, rv = await client.list(res, ns)

    async def run() -> None:
        async for event, obj in client.watch(res, ns, resource_version=rv, timeout_seconds=600):
            if event in ("ADDED", "MODIFIED", "DELETED"):
                seen(event, obj)

    task = asyncio.create_task(run())
    try:
        yield items
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
