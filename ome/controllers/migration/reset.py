"""Reset reconciler (I/O): answers `ome.io/reset-instances` on an InferenceReplica once.

Order: the cleared rows are written first (with the resourceVersion, so a racing writer makes this pass
fail with 409 and retry), then the pods are deleted, the events recorded on the InferenceService (a
standalone replica keeps them) and the annotation removed. A failure before the annotation goes repeats
the request, which then finds the Instance already reset (`nothing to reset`) or rebuilding.
"""

from __future__ import annotations

import contextlib
from typing import Any

import structlog

from ome.api.resources import INFERENCE_REPLICAS, INFERENCE_SERVICES, PODS
from ome.controllers.inferencereplica.owned import owned_children
from ome.framework import errors
from ome.framework.cache import SharedCache
from ome.framework.client import Client
from ome.framework.events import EventRecorder
from ome.framework.reconcile import Request, Result
from ome.omenative import instance_reset, status, teardown
from ome.omenative.pods_view import view

Obj = dict[str, Any]
log = structlog.get_logger("ome.controllers.reset")


class ResetReconciler:
    def __init__(self, client: Client, cache: SharedCache, *, recorder: EventRecorder | None = None,
                 columnar: bool = False) -> None:
        self._client = client
        self._cache = cache
        self._recorder = recorder
        self._columnar = columnar
        self.writes = 0

    async def reconcile(self, req: Request) -> Result:
        replica = self._cache.get_or_none(INFERENCE_REPLICAS, req.name, req.namespace)
        if replica is None or teardown.deleting(replica):
            return Result()
        meta = replica["metadata"]
        value = (meta.get("annotations") or {}).get(instance_reset.ANNOTATION)
        if value is None:
            return Result()
        prev = replica.get("status") or {}
        raw = owned_children(self._cache, PODS, replica)
        pods = [v for p in raw if (v := view(p)) is not None]
        subject = f"InferenceReplica {meta['namespace']}/{meta['name']}"
        component = replica["spec"]["component"]
        out = instance_reset.plan(subject, component, str(value), status.rows_of(prev), pods)
        if out.rows:
            rows = {int(r["index"]): r for r in status.rows_of(prev)} | out.rows
            keep = ("instanceStatuses", "instanceStatusColumns", "instanceStatusEncoding")
            new = {k: v for k, v in prev.items() if k not in keep}
            columnar = self._columnar or prev.get("instanceStatusEncoding") == "ColumnarV2"
            new.update(status.instance_rows(sorted(rows.values(), key=lambda r: int(r["index"])), columnar))
            await self._client.update_status(INFERENCE_REPLICAS, {**replica, "status": new})
            self.writes += 1
        for name in out.deletes:
            with contextlib.suppress(errors.NotFound):
                await self._client.delete(PODS, name, meta["namespace"])
                self.writes += 1
        target = self._event_target(replica)
        for type_, reason, message in out.events:
            if self._recorder is not None:
                self._recorder.event(target, "Warning" if type_ == "Warning" else "Normal", reason, message)
        with contextlib.suppress(errors.NotFound):
            await self._client.patch(INFERENCE_REPLICAS, meta["name"],
                                     {"metadata": {"annotations": {instance_reset.ANNOTATION: None}}},
                                     meta["namespace"])
            self.writes += 1
        log.info("reset-instances answered", replica=f"{meta['namespace']}/{meta['name']}", value=value,
                 reset=sorted(out.rows))
        return Result()

    def _event_target(self, replica: Obj) -> Obj:
        parent = ((replica.get("spec") or {}).get("parentRef") or {}).get("name")
        if not parent:
            return replica
        found = self._cache.get_or_none(INFERENCE_SERVICES, parent, replica["metadata"]["namespace"])
        return found or replica
