"""Creates a reconcile starts and does not wait for.

A new InferenceService's first pass creates its Services and Deployment (an OMENative replica's pass its
Services) and, waiting for them, held a worker for as long as the slowest answered: under load the
apiserver's ClusterIP allocator takes seconds per Service while a Deployment takes tens of milliseconds,
so 4 workers kept 8-12 creates in flight where a plain client keeps 64, and the allocator serves more a
second the more are waiting (bench_scale's audit log). A create handed here runs beside the pass that
asked for it; the pass goes on, and the created object's watch event brings the owner's next pass, which
finds it created (client-go's expectations, for writes).

At most `limit` creates run at once across the manager (`Slots`, shared by its controllers'
write-behinds, `Manager.write_behind`: they share the client's connections). A pass that finds no room
makes its create inline, as before: the workers then wait, which paces the passes at the allocator's
speed. Leaving the create to a later pass instead was measured and is worse: every Deployment is created
in the first minute, and the pods' work that follows slows the Services' allocation (8-12 s per create
while it lasted, against 2 s), so all Ready came later. Per object (resource, namespace, name):

    idle      --start (room)--> in flight
    in flight --answered------> idle      (the caller's write recorded it)
    in flight --failed--------> failed    (logged; the owner is requeued with backoff)
    failed    --the next write of the object is made inline; when it succeeds (clear)--> idle

An owner a pass found with creates in flight (`pending_for`: the InferenceService controller writes no
Ready before its objects exist) is requeued when its last one ends, since the created object's event may
come before the create's answer. A failed create is retried inline so that its error reaches a pass and
takes the controller's usual path (error log, backoff, metrics) instead of repeating here. A pass that
wants a different object than the one in flight waits for that create first: two applies of one object
must not race. The controller cancels what is in flight when it stops or loses its Lease (`cancel`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Final

import structlog

from ome.framework.reconcile import Request

Key = tuple[str, str, str]
"""(resource plural, namespace, name)."""

DEFAULT_LIMIT: Final = 64
"""Creates in flight at once across the manager: what the bench's plain client keeps, enough to keep the
allocator busy, and below the client's 100 connections, so that the writes a pass makes inline always
find one (128 left them waiting for connections behind the Services)."""

FAILED_LIMIT: Final = 10000

log = structlog.get_logger("ome.framework.write_behind")


class Slots:
    """The creates in flight across one manager's write-behinds (they share its client's connections)."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        if limit < 1:
            raise ValueError("write-behind limit must be at least 1")
        self.limit = limit
        self.used = 0

    def take(self) -> bool:
        if self.used >= self.limit:
            return False
        self.used += 1
        return True

    def give(self, count: int = 1) -> None:
        self.used = max(0, self.used - count)


class WriteBehind:
    """One controller's creates in flight; one event loop, no locking."""

    def __init__(self, limit: int = DEFAULT_LIMIT, *, slots: Slots | None = None) -> None:
        self._slots = slots if slots is not None else Slots(limit)
        self._tasks: dict[Key, tuple[str, asyncio.Task[None], Request]] = {}
        self._failed: set[Key] = set()
        self._asked: set[Request] = set()
        """Owners a pass found with creates in flight (`pending_for`): woken when their last one ends."""
        self._requeue: Callable[[Request], None] | None = None
        self._wake: Callable[[Request], None] | None = None

    def bind(self, requeue: Callable[[Request], None], wake: Callable[[Request], None]) -> None:
        """Where owners go back to: a failed create's with backoff (the controller's rate-limited add),
        one a pass asked about at once (its plain add)."""
        self._requeue, self._wake = requeue, wake

    @property
    def in_flight_count(self) -> int:
        return len(self._tasks)

    def in_flight(self, key: Key) -> str | None:
        """The desired hash of the create in flight for `key`, if any."""
        found = self._tasks.get(key)
        return found[0] if found is not None else None

    def pending_for(self, owner: Request) -> bool:
        """Whether a create of `owner` is in flight; if so, the owner is woken once its last one ends."""
        if any(found[2] == owner for found in self._tasks.values()):
            self._asked.add(owner)
            return True
        return False

    def failed(self, key: Key) -> bool:
        """The last create of `key` started here failed: its next write is made inline."""
        return key in self._failed

    def clear(self, key: Key) -> None:
        """An inline write of `key` succeeded."""
        self._failed.discard(key)

    def start(self, key: Key, digest: str, owner: Request, write: Callable[[], Awaitable[object]]) -> bool:
        """Run `write` (a create of `key` at `digest`) beside the caller; False when there is no room or
        the object is failed or in flight, and the caller writes inline."""
        if key in self._tasks or key in self._failed or not self._slots.take():
            return False
        task = asyncio.create_task(self._run(key, owner, write), name=f"write-behind-{key[0]}-{key[2]}")
        self._tasks[key] = (digest, task, owner)
        return True

    async def wait(self, key: Key) -> None:
        """Until the create in flight for `key` is answered (its failure is this module's to report)."""
        found = self._tasks.get(key)
        if found is not None:
            await asyncio.wait([found[1]])

    def cancel(self) -> None:
        """Stop every create in flight (the controller stopped or lost its Lease): the next leader's
        passes find what was not created and create it."""
        for _, task, _ in self._tasks.values():
            task.cancel()
        self._slots.give(len(self._tasks))
        self._tasks.clear()
        self._asked.clear()

    async def _run(self, key: Key, owner: Request, write: Callable[[], Awaitable[object]]) -> None:
        try:
            await write()
        except Exception as exc:  # noqa: BLE001 - every failure goes back to a pass, whatever it is
            if len(self._failed) >= FAILED_LIMIT:
                self._failed.clear()  # owners deleted before their retry; a cleared key is tried here again
            self._failed.add(key)
            log.warning("Create failed; its owner is requeued to create it again", resource=key[0],
                        namespace=key[1], name=key[2], owner=str(owner), error=str(exc),
                        error_type=type(exc).__name__)
            if self._requeue is not None:
                self._requeue(owner)
        finally:
            found = self._tasks.get(key)
            if found is not None and found[1] is asyncio.current_task():
                del self._tasks[key]
                self._slots.give()
                if owner in self._asked and not self.pending_for(owner):
                    self._asked.discard(owner)
                    if self._wake is not None:
                        self._wake(owner)
