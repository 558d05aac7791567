"""What held the InferenceReplica controller's pod creates in one pass, per Instance, for
`operation.waiting` (`ome.omenative.operation_holds`).

An Instance whose PodGroup name is still held by a terminating PodGroup gets no pods that pass
(`PodGroupTerminating`), and the pass looks again after `POD_GROUP_RECHECK`. A create that a
ResourceQuota refused is not an error to back off on: the pass writes the operation's
`QuotaExceeded` wait and requeues after `quota_view.QUOTA_RECHECK` at most, and a quota change in the
namespace reconciles the replica at once (the ResourceQuota watch in setup.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from ome.framework import errors
from ome.framework.client import Client
from ome.framework.resources import Resource
from ome.omenative import instance_names as names
from ome.omenative.operation_holds import QUOTA_EXCEEDED

Obj = dict[str, Any]
Key = tuple[str, str]
CREATED, EXISTS, TERMINATING = "created", "exists", "terminating"
POD_GROUP_RECHECK: Final = 2.0
"""Seconds between looks at a terminating PodGroup: no informer watches PodGroups, and the deletion of
one (its finalizers done) usually takes moments."""


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
            if (index := _index(body)) is not None:
                self.hold(key, index, QUOTA_EXCEEDED)

    def end(self, key: Key) -> dict[int, str]:
        return self._by_key.pop(key, {})

    def unheld(self, key: Key, bodies: list[Obj]) -> list[Obj]:
        """The pod bodies of Instances no hold keeps from being created this pass."""
        held = self._by_key.get(key) or {}
        return [b for b in bodies if _index(b) not in held]


def _index(body: Obj) -> int | None:
    label = (body["metadata"].get("labels") or {}).get(names.INSTANCE_INDEX_LABEL)
    return None if label is None else int(label)


async def ensure_pod_group(client: Client, res: Resource, body: Obj) -> str:
    """Creates an Instance's PodGroup: `created`, `exists`, or `terminating` when its name is still
    held by a PodGroup being deleted (an earlier attempt's). Pods made now would join the group on its
    way out, so the Instance waits (`PodGroupTerminating`) until the name is free."""
    ns, name = body["metadata"]["namespace"], body["metadata"]["name"]
    try:
        await client.create(res, body, ns)
        return CREATED
    except errors.AlreadyExists:
        pass
    try:
        current = await client.get(res, name, ns)
    except errors.NotFound:
        return TERMINATING  # deleted between the two calls: the next pass creates it
    return TERMINATING if (current.get("metadata") or {}).get("deletionTimestamp") else EXISTS
