"""What held the InferenceReplica controller's pod creates in one pass, per Instance, for
`operation.waiting` (`ome.omenative.operation_holds`).

A create that a ResourceQuota refused is not an error to back off on: the pass writes the operation's
`QuotaExceeded` wait and requeues after `quota_view.QUOTA_RECHECK` at most, and a quota change in the
namespace reconciles the replica at once (the ResourceQuota watch in setup.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ome.omenative import instance_names as names
from ome.omenative.operation_holds import QUOTA_EXCEEDED

Obj = dict[str, Any]
Key = tuple[str, str]


class CreateHolds:
    """Per replica key, the holds of the pass in flight (one pass per key at a time: the work queue)."""

    def __init__(self) -> None:
        self._by_key: dict[Key, dict[int, str]] = {}

    def begin(self, key: Key) -> None:
        self._by_key[key] = {}

    def hold(self, key: Key, index: int, reason: str) -> None:
        self._by_key.setdefault(key, {}).setdefault(index, reason)

    def quota_refused(self, key: Key, bodies: Iterable[Obj]) -> None:
        """The Instances of pod bodies whose create a ResourceQuota refused, or that slow start skipped
        after such a refusal (the quota would refuse them as well)."""
        for body in bodies:
            label = (body["metadata"].get("labels") or {}).get(names.INSTANCE_INDEX_LABEL)
            if label is not None:
                self.hold(key, int(label), QUOTA_EXCEEDED)

    def end(self, key: Key) -> dict[int, str]:
        return self._by_key.pop(key, {})
