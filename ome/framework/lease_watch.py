"""A watch of one Lease for a leader election challenger (LeaderElector's `watch_lease`).

It only tells the elector what the Lease looks like as soon as the apiserver has it; the elector's
own GETs and writes stay the source of every decision, so a watch that lags, breaks or reconnects
makes a takeover slower, never unsafe.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol

import structlog

from ome.framework import resources
from ome.framework.leaderelection import LeaseWatch

log = structlog.get_logger(__name__)

RETRY_AFTER: Final = 1.0  # seconds before the next list after a watch ended or first failed
MAX_RETRY_AFTER: Final = 60.0  # failures in a row double the pause up to this
WATCH_SECONDS: Final = 300  # the server ends each watch after this; the next starts from a fresh list


class LeaseReader(Protocol):
    async def list(self, res: Any, namespace: str | None = None, *,
                   field_selector: str | None = None) -> tuple[list[dict[str, Any]], str]: ...

    def watch(self, res: Any, namespace: str | None = None, *, resource_version: str, timeout_seconds: int,
              field_selector: str | None = None) -> Any: ...  # an async iterator of (type, object)


def lease_watch(
    client: LeaseReader, namespace: str, name: str, *,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> LeaseWatch:
    """The watch for `LeaderElector(watch_lease=...)`: calls `observe` with each version of the Lease."""
    selector = f"metadata.name={name}"

    async def follow(observe: Callable[[dict[str, Any] | None], None]) -> None:
        delay = RETRY_AFTER
        while True:
            try:
                items, version = await client.list(resources.LEASES, namespace, field_selector=selector)
                delay = RETRY_AFTER
                observe(items[0] if items else None)
                async for kind, obj in client.watch(resources.LEASES, namespace, resource_version=version,
                                                    timeout_seconds=WATCH_SECONDS, field_selector=selector):
                    if kind != "BOOKMARK":
                        observe(None if kind == "DELETED" else obj)
                # The server ended the watch: list again, so no change between the two is missed.
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the polls still run; only the speed of a takeover is lost meanwhile
                log.info("lease watch failed; retrying", lease=f"{namespace}/{name}", error=repr(exc),
                         retry_after=delay)
                await sleep(delay)
                delay = min(2 * delay, MAX_RETRY_AFTER)  # a lasting failure (403: no watch verb) stays quiet
                continue
            await sleep(RETRY_AFTER)

    return follow
