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

resourceVersions are opaque to clients; etcd's are integers, which is what the comparison relies on. A
value that is not an integer never holds a reconcile back.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Mapping
from typing import Any, Final

MAX_ENTRIES: Final = 20_000
CACHE_LAG_REQUEUE: Final = 1.0
"""Seconds before a reconcile held back by `behind` runs again, should the write's watch event not come."""


def _version(value: Any) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


class WrittenVersions:
    """uid -> resourceVersion of the last successful write of that object by this process."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._max = max_entries
        self._by_uid: dict[str, int] = {}
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._latest: dict[str, Mapping[str, Any]] = {}

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

    def record(self, written: Mapping[str, Any] | None) -> None:
        meta = (written or {}).get("metadata") or {}
        uid, version = meta.get("uid"), _version(meta.get("resourceVersion"))
        if not uid or version is None:
            return
        previous = self._by_uid.pop(uid, None)  # re-inserted last: the most recently written
        self._by_uid[uid] = version if previous is None else max(previous, version)
        if written is not None and uid in self._locks and (previous is None or version >= previous):
            self._latest[uid] = written  # a status two reconcilers share: `newest` plans from it
        while len(self._by_uid) > self._max:  # oldest first: objects never read again
            oldest = next(iter(self._by_uid))
            del self._by_uid[oldest]
            self._latest.pop(oldest, None)

    def newest(self, cached: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The object as this process last wrote it under its `lock`, when that is newer than
        `cached`: a pass can plan from the write's answer instead of waiting for its watch event."""
        meta = cached.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        latest = self._latest.get(uid)
        seen = _version(meta.get("resourceVersion"))
        if latest is None or seen is None:
            return None
        mine = _version((latest.get("metadata") or {}).get("resourceVersion"))
        if mine is None or mine <= seen or mine != self._by_uid.get(uid):
            return None  # the cache caught up, or a later write of ours is not kept (not under the lock)
        return latest

    def behind(self, cached: Mapping[str, Any]) -> bool:
        """True while `cached` is older than our last write of the same object."""
        meta = cached.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        wrote = self._by_uid.get(uid)
        if wrote is None:
            return False
        seen = _version(meta.get("resourceVersion"))
        if seen is None or seen >= wrote:
            self._by_uid.pop(uid, None)  # the cache caught up
            self._latest.pop(uid, None)
            return False
        return True
