"""Service creates a reconcile starts and does not wait for.

A new InferenceService's first pass creates its Services, Deployment, autoscaler and budget at once and,
waiting for them, held a worker for as long as the slowest answered: under load the apiserver's ClusterIP
allocator takes seconds per Service (2.4 s at p50 with 64 waiting, bench_scale's audit log) while a
Deployment takes tens of milliseconds, so 4 workers kept 8-12 Service creates in flight and the
Deployments, which the pods and so readiness wait for, queued behind them. A create handed here runs
beside the pass that asked for it; the pass goes on, and the created object's watch event brings the
owner's next pass, which finds it created (client-go's expectations, for writes).

At most `limit` creates run at once across the manager (`Slots`, shared by its controllers' write-behinds:
`Manager.write_behind`). A pass that finds no room leaves its create to a later pass and
goes on (`defer`): the owner waits here and is requeued when a create ends, so the slow creates queue
here, bounded by the number of owners, not in front of the fast ones. Per object (resource, namespace,
name):

    idle      --start (room)--> in flight
    idle      --no room-------> idle, its owner waiting (requeued, first come first served, when a
                                create in flight ends)
    (an owner a pass found with creates pending is requeued when its last one ends)
    in flight --answered------> idle      (the caller's write recorded it)
    in flight --failed--------> failed    (logged; the owner is requeued with backoff)
    failed    --the next write of the object is made inline; when it succeeds (clear)--> idle

A failed create is retried inline so that its error reaches a pass and takes the controller's usual
path (error log, backoff, metrics) instead of repeating here. A pass that wants a different object
than the one in flight waits for that create first: two applies of one object must not race.
The controller cancels what is in flight when it stops or loses its Lease (`cancel`).
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
allocator busy, and below the client's 100 connections, so that the writes a pass waits for always find
one (128 left the Deployments waiting for connections behind the Services)."""

FAILED_LIMIT: Final = 10000

log = structlog.get_logger("ome.framework.write_behind")


class Slots:
    """The creates in flight across one manager's write-behinds (they share its client's connections);
    a freed slot wakes a waiting owner of any of them, round robin."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        if limit < 1:
            raise ValueError("write-behind limit must be at least 1")
        self.limit = limit
        self.used = 0
        self._members: list[WriteBehind] = []
        self._next = 0

    def join(self, member: WriteBehind) -> None:
        self._members.append(member)

    def take(self) -> bool:
        if self.used >= self.limit:
            return False
        self.used += 1
        return True

    def give(self, count: int = 1, *, wake: bool = True) -> None:
        self.used = max(0, self.used - count)
        if not wake:
            return
        for step in range(len(self._members)):
            member = self._members[(self._next + step) % len(self._members)]
            if member.wake_one():
                self._next = (self._next + step + 1) % len(self._members)
                return


class WriteBehind:
    """One controller's creates in flight; one event loop, no locking."""

    def __init__(self, limit: int = DEFAULT_LIMIT, *, slots: Slots | None = None) -> None:
        self._slots = slots if slots is not None else Slots(limit)
        self._slots.join(self)
        self._tasks: dict[Key, tuple[str, asyncio.Task[None], Request]] = {}
        self._failed: set[Key] = set()
        self._waiting: dict[Request, None] = {}
        """Owners whose create found no room, oldest first."""
        self._asked: set[Request] = set()
        """Owners a pass found with creates pending (`pending_for`): woken when their last one ends."""
        self._requeue: Callable[[Request], None] | None = None
        self._wake: Callable[[Request], None] | None = None

    def bind(self, requeue: Callable[[Request], None], wake: Callable[[Request], None]) -> None:
        """Where owners go back to: a failed create's with backoff (the controller's rate-limited add),
        a waiting one's at once (its plain add)."""
        self._requeue, self._wake = requeue, wake

    @property
    def waiting_count(self) -> int:
        return len(self._waiting)

    def pending_for(self, owner: Request) -> bool:
        """Whether a create of `owner` is in flight or waits for room (its objects are not all there:
        the InferenceService controller reports no Ready before they are). When it is, the owner is
        woken once its last create ends: the created object's event may have come before the answer."""
        if owner in self._waiting or self._in_flight_for(owner):
            self._asked.add(owner)
            return True
        return False

    def _in_flight_for(self, owner: Request) -> bool:
        return any(found[2] == owner for found in self._tasks.values())

    def defer(self, owner: Request) -> None:
        """`owner`'s pass found no room for a create: requeue it when a create in flight ends."""
        self._waiting[owner] = None

    @property
    def in_flight_count(self) -> int:
        return len(self._tasks)

    def in_flight(self, key: Key) -> str | None:
        """The desired hash of the create in flight for `key`, if any."""
        found = self._tasks.get(key)
        return found[0] if found is not None else None

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
        self._slots.give(len(self._tasks), wake=False)
        self._tasks.clear()
        self._waiting.clear()
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
                if owner in self._asked and owner not in self._waiting and not self._in_flight_for(owner):
                    self._asked.discard(owner)
                    if self._wake is not None:
                        self._wake(owner)
                self._slots.give()

    def wake_one(self) -> bool:
        """A slot is free: the owner that waited longest gets its next pass (which may find the slot
        taken again, and waits again). False when none waits here."""
        if not self._waiting:
            return False
        owner = next(iter(self._waiting))
        del self._waiting[owner]
        if self._wake is not None:
            self._wake(owner)
        return True
