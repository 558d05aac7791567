"""The resourceVersions of this process's own writes, kept until the informer cache shows them.

kube-controller-manager refuses to sync from a cache older than its own last write ("read version X is
not as new as written version Y"). Two controllers of one process that write the same object (the
InferenceReplica and Instance rollout reconcilers both write a replica's status) need the same check:
after an apiserver restart the replica watch can lag the pod watch by seconds, and a plan made from the
replica's older status recreated a pod the rollout had just drained, leaving a stray pod no later pass
removed. A reconciler that finds its cached object `behind` waits for the watch event of the write.

Those two also take turns writing the status (`lock`): without it, during a rollout each pod event had
both write and one of them lost with a 409 nearly every time. A write made under the lock is kept until
the cache shows it, so the next writer plans from that write's answer (`newest`) at once.

The autoscaler keeps its applies the same way (`LastWrites`, keyed by name with the hash of what it
applied): the watch event of one apply re-runs a pass before the cache shows the other.

Only the kinds a reconciler asks about are kept (`track`): the client writes pods, Services, revisions
and events by the thousand under churn, and an entry no one reads would stay until `MAX_ENTRIES`
pushed it out (a 20-minute soak's memory grew by exactly that). An object whose write leaves it gone
(its last finalizer removed while it is being deleted) is forgotten at once.

resourceVersions are opaque to clients; etcd's are integers, which is what the comparison relies on. A
value that is not an integer never holds a reconcile back.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Hashable, Mapping
from typing import Any, Final, Generic, TypeVar

from ome.framework.resources import Resource

MAX_ENTRIES: Final = 20_000
CACHE_LAG_REQUEUE: Final = 1.0
"""Seconds before a reconcile held back by `behind` runs again, should the write's watch event not come."""

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def resource_version(obj: Mapping[str, Any] | None) -> int | None:
    """`obj`'s resourceVersion as etcd's integer; None when there is none or it is not an integer."""
    try:
        return int(str(((obj or {}).get("metadata") or {}).get("resourceVersion")))
    except ValueError:
        return None


def put_last(entries: dict[K, V], key: K, value: V, limit: int) -> None:
    """`entries[key] = value` as the most recent entry (dicts keep insertion order); past `limit` entries
    the least recently put go first."""
    entries.pop(key, None)
    entries[key] = value
    while len(entries) > limit:
        del entries[next(iter(entries))]


class LastWrites(Generic[K, V]):
    """key -> (resourceVersion, value) of this process's last write of an object, kept until the cache
    shows that write; past `max_entries` the least recently written go first (objects no pass reads
    again)."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._max = max_entries
        self._entries: dict[K, tuple[int, V]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K) -> tuple[int, V] | None:
        return self._entries.get(key)

    def put(self, key: K, version: int, value: V) -> None:
        put_last(self._entries, key, (version, value), self._max)

    def forget(self, key: K) -> None:
        self._entries.pop(key, None)

    def ahead_of(self, key: K, cached: Mapping[str, Any] | None) -> tuple[int, V] | None:
        """Our last write of `key` while `cached` (the cache's copy) is older than it. Otherwise None,
        and the entry is dropped: the cache caught up, or its version (none, not an integer) cannot
        hold anything back."""
        mine = self._entries.get(key)
        if mine is None:
            return None
        seen = resource_version(cached)
        if seen is None or seen >= mine[0]:
            del self._entries[key]
            return None
        return mine


class WrittenVersions:
    """uid -> resourceVersion of the last successful write of that object by this process, with the
    object as written when that write was made under the object's `lock`."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._writes: LastWrites[str, Mapping[str, Any] | None] = LastWrites(max_entries)
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._tracked: set[tuple[str, str]] = set()

    def kept(self) -> int:
        """Writes kept (no `__len__`: an empty one must stay truthy where a client's is taken with `or`)."""
        return len(self._writes)

    def track(self, res: Resource) -> None:
        """Keep this process's writes of `res` from now on: a reconciler that asks `behind` or
        `newest` about objects of a kind says so once, when it is built."""
        self._tracked.add((res.group, res.plural))

    def lock(self, uid: str) -> asyncio.Lock:
        """One status writer at a time for the object among this process's reconcilers (the
        InferenceReplica and Instance rollout reconcilers write the same status). A writer that plans
        under it from a cache that is not `behind` cannot lose its write to the other one with a 409;
        each of them would otherwise retry the other's race over and over while pods change. Kept only
        while someone holds or waits on it."""
        found = self._locks.get(uid)
        if found is None:
            found = self._locks[uid] = asyncio.Lock()
        return found

    def record(self, res: Resource, written: Mapping[str, Any] | None) -> None:
        """Called by the client with the answer to each of its writes of `res`."""
        if (res.group, res.plural) not in self._tracked:
            return
        meta = (written or {}).get("metadata") or {}
        uid, version = meta.get("uid"), resource_version(written)
        if not uid or version is None:
            return
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._writes.forget(uid)  # the write let the object go: no later cache copy will show it
            return
        previous = self._writes.get(uid)
        if previous is not None and version < previous[0]:
            self._writes.put(uid, *previous)  # an earlier write answered last: the newest one counts
        else:  # a status two reconcilers share (written under its lock): `newest` plans from it
            self._writes.put(uid, version, written if uid in self._locks else None)

    def newest(self, cached: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The object as this process last wrote it under its `lock`, when that is newer than
        `cached`: a pass can plan from the write's answer instead of waiting for its watch event."""
        mine = self._writes.get(str((cached.get("metadata") or {}).get("uid") or ""))
        seen = resource_version(cached)
        if mine is None or mine[1] is None or seen is None:
            return None
        version, latest = mine
        if resource_version(latest) != version or version <= seen:
            return None  # the cache caught up, or a later write of ours is not kept (not under the lock)
        return latest

    def behind(self, cached: Mapping[str, Any]) -> bool:
        """True while `cached` is older than our last write of the same object."""
        return self._writes.ahead_of(str((cached.get("metadata") or {}).get("uid") or ""), cached) is not None
