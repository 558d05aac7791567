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

from collections.abc import Callable, Mapping
from typing import Any

from ome.framework.resources import Resource
from ome.framework.written import MAX_ENTRIES, LastWrites, resource_version

Key = tuple[str, str, str]

SeenVersion = Callable[[Resource, str | None, Mapping[str, str]], int | None]
"""(resource, namespace, labels) -> how far the informers that would hold such an object have got
(SharedCache.seen_version)."""


def key_of(res: Resource, obj: Mapping[str, Any]) -> Key:
    """(resource, namespace, name): a cached object carries no kind, so the resource names it."""
    meta = obj.get("metadata") or {}
    return (res.name, str(meta.get("namespace") or ""), str(meta["name"]))


class OwnApplies:
    """key -> (resourceVersion, desired hash) of this process's last apply of an object, until the cache
    shows it (module docstring); past `max_entries` the least recently applied go first. `seen` is asked
    only about an object absent from the cache that has an entry."""

    def __init__(self, seen: SeenVersion | None = None, max_entries: int = MAX_ENTRIES) -> None:
        self._seen = seen
        self._applies: LastWrites[Key, str] = LastWrites(max_entries)

    def pending(
        self, res: Resource, desired: Mapping[str, Any], cached: Mapping[str, Any] | None
    ) -> str | None:
        """The hash of our last apply of `desired`'s object while the cache has not shown it (`cached`
        older than it, or absent while the informers are below its version); None when the cache decides."""
        key = key_of(res, desired)
        mine = self._applies.get(key)
        if mine is None:
            return None
        if cached is None:
            meta = desired["metadata"]
            seen = self._seen(res, meta.get("namespace"), meta.get("labels") or {}) if self._seen else None
            if seen is not None and seen < mine[0]:
                return mine[1]
            self._applies.forget(key)  # shown and then deleted, or nothing to tell: the cache decides
            return None
        ahead = self._applies.ahead_of(key, cached)
        return None if ahead is None else ahead[1]

    def record(self, res: Resource, obj: Mapping[str, Any], desired_hash: str,
               answer: Mapping[str, Any] | None) -> None:
        """After an apply of `obj`: `answer` is the apiserver's reply (its resourceVersion is kept)."""
        key = key_of(res, obj)
        version = resource_version(answer)
        if version is None:
            self._applies.forget(key)  # nothing to compare the cache with: it decides
        else:
            self._applies.put(key, version, desired_hash)

    def forget(self, res: Resource, obj: Mapping[str, Any]) -> None:
        self._applies.forget(key_of(res, obj))

    def __len__(self) -> int:
        return len(self._applies)
