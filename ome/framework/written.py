"""The resourceVersions of this process's own writes, kept until the informer cache shows them.

kube-controller-manager refuses to sync from a cache older than its own last write ("read version X is
not as new as written version Y"). Two controllers of one process that write the same object (the
InferenceReplica and Instance rollout reconcilers both write a replica's status) need the same check:
after an apiserver restart the replica watch can lag the pod watch by seconds, and a plan made from the
replica's older status recreated a pod the rollout had just drained, leaving a stray pod no later pass
removed. A reconciler that finds its cached object `behind` waits for the watch event of the write.

resourceVersions are opaque to clients; etcd's are integers, which is what the comparison relies on. A
value that is not an integer never holds a reconcile back.
"""

from __future__ import annotations

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

    def record(self, written: Mapping[str, Any] | None) -> None:
        meta = (written or {}).get("metadata") or {}
        uid, version = meta.get("uid"), _version(meta.get("resourceVersion"))
        if not uid or version is None:
            return
        previous = self._by_uid.pop(uid, None)  # re-inserted last: the most recently written
        self._by_uid[uid] = version if previous is None else max(previous, version)
        while len(self._by_uid) > self._max:  # oldest first: objects never read again
            del self._by_uid[next(iter(self._by_uid))]

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
            return False
        return True
