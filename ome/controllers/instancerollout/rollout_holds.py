"""What holds an Update's Instances back, per replica, as this process learnt it from its pod writes:
a create a ResourceQuota refused (`waiting: QuotaExceeded`), a PodGroup name a PodGroup being deleted
still holds (`waiting: PodGroupTerminating`), a pod the API server rejected as invalid (InvalidPodSpec).
The planner reads them as inputs; a replica gone or being deleted forgets them.
"""

from __future__ import annotations

Key = tuple[str, str]


class RolloutHolds:
    def __init__(self) -> None:
        self._rejected: dict[Key, dict[int, str]] = {}
        self._quota: dict[Key, set[int]] = {}
        """Instances whose last pod create a ResourceQuota refused, by replica (`waiting: QuotaExceeded`)."""
        self._group_wait: dict[Key, set[int]] = {}
        """Instances whose PodGroup name a PodGroup being deleted holds (`waiting: PodGroupTerminating`)."""

    def forget(self, key: Key) -> None:
        self._rejected.pop(key, None)
        self._quota.pop(key, None)
        self._group_wait.pop(key, None)

    def rejected(self, key: Key) -> dict[int, str]:
        return self._rejected.get(key, {})

    def reject(self, key: Key, index: int, reason: str) -> None:
        self._rejected.setdefault(key, {})[index] = reason

    def clear_rejected(self, key: Key) -> None:
        self._rejected.pop(key, None)

    def quota_refused(self, key: Key, index: int) -> None:
        self._quota.setdefault(key, set()).add(index)

    def quota_admitted(self, key: Key, index: int) -> None:
        self._quota.get(key, set()).discard(index)

    def quota_refusals(self, key: Key) -> set[int]:
        return self._quota.get(key, set())

    def groups_waited(self, key: Key, gangs: set[int], terminating: set[int]) -> None:
        """The outcome of ensuring the PodGroups of `gangs`: those `terminating` wait, the others not."""
        waits = self._group_wait.setdefault(key, set())
        waits.difference_update(gangs - terminating)
        waits.update(terminating)
        if not waits:
            del self._group_wait[key]

    def waits_on_groups(self, key: Key) -> bool:
        return bool(self._group_wait.get(key))

    def narrowed(self, key: Key, keep: set[int]) -> tuple[frozenset[int], frozenset[int]]:
        """The replica's Instances refused by quota and waiting on a PodGroup, kept only while they
        matter (`keep`)."""
        return _narrow(self._quota, key, keep), _narrow(self._group_wait, key, keep)


def _narrow(holds: dict[Key, set[int]], key: Key, keep: set[int]) -> frozenset[int]:
    """A replica's held Instances (refused by quota, waiting on a PodGroup) that still matter; a replica
    with none keeps no entry (1,000 empty sets at N=1000)."""
    held = holds.get(key)
    if held is None:
        return frozenset()
    held &= keep
    if not held:
        del holds[key]
    return frozenset(held)
