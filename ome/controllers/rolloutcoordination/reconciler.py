"""Rollout coordination reconciler: keyed by InferenceService, it reports the rollout groups.

The limits themselves are applied where Instances move (the Instance rollout reconciler asks
`observe.limit_for_replica` before each start), so a limit is never stale. This reconciler runs the same
plan on the same cache and writes what it finds:

- `status.rolloutCoordination.groups` (server-side apply of that field alone, its own field manager);
- a `CoordinationGroupFailed` Warning event on the InferenceService when a group turns Failed;
- `ome_omenative_rollout_group_transition_total{namespace,isvc,group,from,to}` per phase change.

The `RolloutCoordinationReady` condition is set by the InferenceService controller from the same plan
(`condition.with_condition`), since that controller owns the conditions list.
A pass that finds nothing changed writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

import structlog
from prometheus_client import Counter

from ome.api.resources import INFERENCE_SERVICES
from ome.controllers.rolloutcoordination import observe
from ome.framework import errors
from ome.framework.cache import SharedCache
from ome.framework.client import Client
from ome.framework.events import EventRecorder
from ome.framework.reconcile import Request, Result
from ome.omenative import coordination_status as cstatus
from ome.omenative.coordination_types import FAILED
from ome.omenative.rollout_budget import OperatorDefault

Obj = dict[str, Any]
log = structlog.get_logger("ome.controllers.rolloutcoordination")

FIELD_MANAGER: Final = "ome-rolloutcoordination-controller"
TRANSITIONS: Final = Counter(
    "ome_omenative_rollout_group_transition_total",
    "Count of phase transitions per (namespace, isvc, group, from, to) for OMENative coordination groups.",
    ["namespace", "isvc", "group", "from", "to"],
)


class RolloutCoordinationReconciler:
    def __init__(
        self,
        client: Client,
        cache: SharedCache,
        *,
        defaults: Mapping[str, OperatorDefault] | None = None,
        ratio_tolerance: int = 5,
        recorder: EventRecorder | None = None,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self._client = client
        self._cache = cache
        self._defaults = dict(defaults or {})
        self._tolerance = ratio_tolerance
        self._recorder = recorder
        self._now = now or (lambda: datetime.now(UTC).replace(microsecond=0))
        self.writes = 0
        """API writes made, for tests (a no-op reconcile adds none)."""

    async def reconcile(self, req: Request) -> Result:
        isvc = self._cache.get_or_none(INFERENCE_SERVICES, req.name, req.namespace)
        if isvc is None or (isvc.get("metadata") or {}).get("deletionTimestamp"):
            return Result()
        now = self._now()
        previous = (isvc.get("status") or {}).get("rolloutCoordination") or {}
        plan = observe.plan_for(self._cache, isvc, self._defaults, now, self._tolerance)
        groups = cstatus.groups_status(plan, previous, now)
        if groups == (previous.get("groups") or []):
            return Result(requeue_after=plan.wake_after)
        changes = cstatus.transitions(previous, groups)
        await self._write(isvc, groups)
        for name, before, after in changes:
            TRANSITIONS.labels(req.namespace, req.name, name, before, after).inc()
            log.info("rollout group transition", namespace=req.namespace, isvc=req.name, group=name,
                     phase_from=before, phase_to=after)
            if after == FAILED and self._recorder is not None:
                group = next(g for g in groups if g["name"] == name)
                message = cstatus.failed_message(group)
                self._recorder.event(isvc, "Warning", cstatus.GROUP_FAILED_EVENT, message)
        return Result(requeue_after=plan.wake_after)

    async def _write(self, isvc: Obj, groups: list[Obj]) -> None:
        meta = isvc["metadata"]
        body = {
            "apiVersion": "ome.io/v1beta1",
            "kind": "InferenceService",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
            # An empty list would be kept as []: leave the field out, and apply prunes what we set before.
            "status": {"rolloutCoordination": {"groups": groups}} if groups else {},
        }
        try:
            await self._client.apply(
                INFERENCE_SERVICES, body, field_manager=FIELD_MANAGER, subresource="status"
            )
        except errors.NotFound:
            return
        self.writes += 1
