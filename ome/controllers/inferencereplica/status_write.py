"""The InferenceReplica's status write, and the events a pass announces after it.

The status is the Instances' memory (phase, operation, step), and the pod writes of a pass already
followed it: a 409 caused only by someone else's metadata write must not lose it. The write's outcome
goes to the status-write series (`ome.omenative.status_metrics`), with an event when the apiserver
refuses it as too large or when it converted the per-Instance encoding.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from ome.api.resources import INFERENCE_REPLICAS
from ome.framework import errors
from ome.framework.client import Client
from ome.framework.events import EventRecorder
from ome.framework.written import WrittenVersions
from ome.omenative import status_metrics
from ome.omenative.instances import Event

Obj = dict[str, Any]

_INSTANCE_EVENTS: Final = frozenset(
    {"InstanceFailed", "RestartTriggered", "RestartCompleted", "TerminalPodRecycled", "FoundOrphan"}
)


class StatusWriter:
    def __init__(self, client: Client, written: WrittenVersions) -> None:
        self._client = client
        self._written = written
        self.writes = 0
        """API writes made, for the reconciler's count."""

    async def write(self, replica: Obj, new: Obj, recorder: EventRecorder | None) -> None:
        """Write the status planned from `replica`. A 409 caused only by someone else's metadata write
        (same status, same generation on a live read) is written again on the fresh object. Any other
        409 is raised: the pass was planned from a stale status and is redone from the cache."""
        previous = dict(replica.get("status") or {})
        meta = replica["metadata"]
        lock = self._written.lock(meta["uid"])
        try:
            # One status writer at a time with the Instance rollout reconciler (written.py); a write of
            # this process since our read would fail with 409, so it goes to the live read at once.
            conflict: errors.Conflict | None = None
            async with lock:
                if self._written.behind(replica):
                    conflict = errors.Conflict(409, "Conflict", "the replica was written since it was read")
                else:
                    try:
                        await self._client.update_status(INFERENCE_REPLICAS, {**replica, "status": new})
                    except errors.Conflict as exc:
                        conflict = exc
            if conflict is not None:
                fresh = await self._client.get(INFERENCE_REPLICAS, meta["name"], meta["namespace"])
                same = (fresh.get("status") or {}) == (replica.get("status") or {})
                if not same or fresh["metadata"].get("generation") != meta.get("generation"):
                    raise conflict
                async with lock:
                    await self._client.update_status(INFERENCE_REPLICAS, {**fresh, "status": new})
        except errors.ApiError as exc:
            too_large = exc.status == 413 or "too large" in exc.message.lower()
            status_metrics.record_write(replica, previous, new, "rejected" if too_large else "error")
            if too_large and recorder is not None:  # stalls until the status fits
                recorder.event(replica, "Warning", status_metrics.SIZE_EXCEEDED,
                               status_metrics.size_exceeded_message(replica, new))
            raise
        self.writes += 1
        converted = status_metrics.record_write(replica, previous, new, "success")
        if converted is not None and recorder is not None:
            recorder.event(replica, "Normal", status_metrics.CONVERTED,
                           status_metrics.converted_message(replica, converted))


def announce(recorder: EventRecorder | None, replica: Obj, events: Iterable[Event]) -> None:
    """The pass's events, after its status write: a once-only event is stamped in `announced` by the
    write that follows it."""
    for type_, reason, message in events:
        if recorder is not None:
            # Instance events are for the user: on the InferenceService, as documented (troubleshoot,
            # Instances fail; instance-restart-policy); a standalone replica has none and keeps them.
            target = _parent_service(replica) if reason in _INSTANCE_EVENTS else None
            recorder.event(target or replica, "Warning" if type_ == "Warning" else "Normal", reason, message)


def _parent_service(replica: Mapping[str, Any]) -> Obj | None:
    """The InferenceService owning a projected replica, as an event's involved object; None if standalone."""
    meta = replica.get("metadata") or {}
    owner = next((o for o in meta.get("ownerReferences") or [] if o.get("kind") == "InferenceService"), None)
    if owner is None:
        return None
    return {"apiVersion": owner.get("apiVersion", "ome.io/v1beta1"), "kind": "InferenceService",
            "metadata": {"name": owner["name"], "namespace": meta.get("namespace"), "uid": owner.get("uid")}}
