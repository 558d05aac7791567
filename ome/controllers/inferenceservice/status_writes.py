"""The InferenceService status write, and our last write of each service until the cache shows it.

The InferenceService reconciler is the one writer of the status: the autoscaler controller's entries
(`status.components.<c>.autoscaler`) are merged into every status written (autoscaler/entries.py), so a new
service's first status carries them in the same write. A status is applied (status subresource) only when
it differs from the one it is compared with, so a no-op reconcile writes nothing.

The service's own status events start no reconcile, so our last write of a service is held here until the
informer shows it (`forget_shown`): until then a pass compares with what we wrote, not with the cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import structlog

from ome.api import resources
from ome.api.resources import Resource
from ome.controllers import shared_conditions
from ome.controllers.autoscaler import entries as scaler_entries
from ome.controllers.inferenceservice import converge, status

Obj = dict[str, Any]
_Written = tuple[str | None, str | None, Obj]
"""A status write: the resourceVersion before and after it, and the status written."""

log = structlog.get_logger("ome.controllers.inferenceservice")


class Reader(Protocol):
    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None: ...


class StatusWrites:
    """Writes the status of services; the writer comes with each write (the reconciler's, which tests may
    wrap to count writes)."""

    def __init__(self, reader: Reader, entries: scaler_entries.AutoscalerEntries) -> None:
        self._reader = reader
        self._entries = entries
        self._written: dict[tuple[str, str], _Written] = {}
        """Per service, our last status write: the resourceVersion before and after it, and the status."""

    @property
    def held(self) -> int:
        """Services whose last status write (by this process) the cache does not show yet."""
        return len(self._written)

    def forget_shown(self, event_type: str, isvc: Obj) -> None:
        """Drop our last status write of a service once the cache shows it (or the service is gone)."""
        meta = isvc["metadata"]
        gone = event_type == "DELETED"
        self._held_write((meta.get("namespace", ""), meta["name"]), None if gone else isvc)

    def written_before(self, isvc: Obj) -> bool:
        """Whether this process wrote the service's status and the cache may not show it yet."""
        meta = isvc["metadata"]
        return (meta.get("namespace", ""), meta["name"]) in self._written

    def published(self, isvc: Obj) -> Mapping[str, Obj] | None:
        """The autoscaler controller's entries for the service."""
        meta = isvc["metadata"]
        return self._entries.published(meta.get("namespace", ""), meta["name"])

    def _held_write(self, key: tuple[str, str], cached: Obj | None) -> _Written | None:
        """Our last status write of the service while `cached` does not show it; dropped once it does or
        the service is gone (`cached` None)."""
        written = self._written.get(key)
        if written is None:
            return None
        if cached is not None and _older(cached["metadata"].get("resourceVersion"), written):
            return written
        del self._written[key]
        return None

    async def write(self, writer: converge.Writer, isvc: Obj, computed: Obj) -> None:
        meta = isvc["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        # The cache as it is now, not as this pass read it: the informer drops our held write once it
        # shows it (forget_shown), so a pass that read the service before that event must compare
        # with the copy that shows it, or a change back to what it read would be skipped.
        current = self._reader.get_or_none(resources.INFERENCE_SERVICES, meta["name"], meta["namespace"])
        current = current or isvc
        baseline = current.get("status") or {}
        written = self._held_write(key, current)
        if written is not None:
            # The cache has not shown our last status write yet, and the service's own status events
            # start no reconcile: compare with what we wrote, or a change back to the cached status
            # would be skipped and the written one stay for good. The cache may show an earlier write
            # of ours meanwhile: only the last one's resourceVersion says it caught up.
            baseline = written[2]
        computed = scaler_entries.merge(computed, baseline, self.published(isvc))
        # The rollout run controller's conditions as the status compared with shows them, guarded by
        # that status's resourceVersion: the conditions list is atomic (shared_conditions).
        guarded = shared_conditions.shared(current, baseline)
        if guarded:
            conditions = shared_conditions.rebase(
                computed.get("conditions") or [], baseline.get("conditions") or [], run_controller=False
            )
            computed = {**computed, "conditions": conditions}
        if not status.differs(baseline, computed):
            return
        body = {
            "apiVersion": "ome.io/v1beta1",
            "kind": "InferenceService",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
            "status": computed,
        }
        if guarded:
            seen = written[1] if written is not None else current["metadata"].get("resourceVersion")
            body = shared_conditions.precondition(body, seen)
        applied = await writer.apply(
            resources.INFERENCE_SERVICES, body, field_manager=converge.FIELD_MANAGER, subresource="status"
        )
        after = ((applied or {}).get("metadata") or {}).get("resourceVersion")
        self._written[key] = (current["metadata"].get("resourceVersion"), after, computed)
        # Its watch event may have come first: then there is nothing to hold.
        self._held_write(key, self._reader.get_or_none(resources.INFERENCE_SERVICES, meta["name"],
                                                       meta["namespace"]))
        if scaler_entries.legacy_owner(applied):
            await _release_legacy_status(writer, meta)


async def _release_legacy_status(writer: converge.Writer, meta: Mapping[str, Any]) -> None:
    """An object the autoscaler wrote status entries on under its own manager: this controller owns
    all it wants now (just applied), so an empty apply under that manager drops what only it held."""
    log.info("Releasing the status fields of the autoscaler's former field manager")
    body = {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"]}}
    await writer.apply(resources.INFERENCE_SERVICES, body, subresource="status",
                       field_manager=scaler_entries.LEGACY_FIELD_MANAGER)


def _older(cached: str | None, written: _Written) -> bool:
    """Whether the cached resourceVersion predates our last status write (etcd's are integers; an
    opaque one counts as older only while it is the one the write started from)."""
    before, after, _ = written
    try:
        return int(str(cached)) < int(str(after))
    except ValueError:
        return cached == before
