"""This process's own server-side applies, kept until the informer cache shows them.

A pass that runs right after another one of the same owner (the watch event of one child's apply, or a
child's status step, re-runs it) can read a cache that does not show the earlier pass's other applies
yet: the child is absent (just created) or an older copy. Compared with that copy, the desired child
looks missing or changed and would be applied again, the same content twice.

So each apply is kept with the hash of what was applied and the resourceVersion the apiserver answered,
keyed by (resource, namespace, name) since an object not in the cache has no uid to look up by. While
the cache has not shown that version, a pass compares its desired object with what it applied (same
hash: skipped; another: applied, even when it equals the stale cached copy):

- a cached copy older than the apply's answer has not shown it;
- an absent object has not been shown yet while the informers that would hold it (by kind, namespace
  and labels) have not reached the apply's version (`seen`, the lowest resourceVersion they have stored
  or been told of: SharedCache.seen_version). Once they
  have, absence means someone deleted it after the apply, and the object is applied again. Without a
  `seen` (an informer whose versions are not integers, a reader that cannot tell) absence is never
  held back: not yet shown and deleted look the same there.

Once the cache shows the apply's version or a newer one the entry goes and the cached object alone
decides, so an edit made after the apply is repaired as drift. Skipping is safe because the cache will
show the apply: its watch event re-runs the owner, and that pass decides from the cache.

resourceVersions are compared as etcd's integers (written.py).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any, Generic, TypeVar

from ome.framework.resources import Resource
from ome.framework.written import MAX_ENTRIES, LastWrites, resource_version

K = TypeVar("K", bound=Hashable)

SeenVersion = Callable[[Resource, str | None, Mapping[str, str]], int | None]
"""(resource, namespace, labels) -> how far the informers that would hold such an object have got
(SharedCache.seen_version)."""


class OwnApplies(Generic[K]):
    """key -> (resourceVersion, desired hash) of this process's last apply of an object, until the cache
    shows it (module docstring); past `max_entries` the least recently applied go first."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._applies: LastWrites[K, str] = LastWrites(max_entries)

    def pending(self, key: K, cached: Mapping[str, Any] | None, seen: int | None = None) -> str | None:
        """The hash of our last apply of `key` while the cache has not shown it (`cached` older than it,
        or absent while `seen` is below its version); None when the cache decides."""
        mine = self._applies.get(key)
        if mine is None:
            return None
        if cached is None:
            if seen is not None and seen < mine[0]:
                return mine[1]
            self._applies.forget(key)  # shown and then deleted, or nothing to tell: the cache decides
            return None
        ahead = self._applies.ahead_of(key, cached)
        return None if ahead is None else ahead[1]

    def record(self, key: K, desired_hash: str, answer: Mapping[str, Any] | None) -> None:
        """After an apply: `answer` is the apiserver's reply (its resourceVersion is kept)."""
        version = resource_version(answer)
        if version is None:
            self._applies.forget(key)  # nothing to compare the cache with: it decides
        else:
            self._applies.put(key, version, desired_hash)

    def forget(self, key: K) -> None:
        self._applies.forget(key)

    def __len__(self) -> int:
        return len(self._applies)
