"""Stuck-deletion reconciler (I/O): the force-delete escalation for an InferenceReplica's pods.

Keyed by InferenceReplica; runs only when `lifecycle.forceDelete` is set. Reads the replica's pods and
their Nodes from the shared cache, asks `ome.omenative.force_delete` what to do, force-deletes (grace 0,
with the pod's uid as a precondition, so a recreated pod of the same name is never hit), and records
PodForceDeleted / PodDeleteBlockedByFinalizer on the InferenceService (the replica when it is gone).
Each force-deletion is also kept in the audit ConfigMap. A blocked pod is reported once per pod uid.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

import structlog

from ome.api.resources import INFERENCE_REPLICAS, INFERENCE_SERVICES, PODS
from ome.controllers.inferencereplica.owned import owned_children
from ome.framework import errors
from ome.framework.cache import SharedCache
from ome.framework.client import Client
from ome.framework.events import EventRecorder
from ome.framework.reconcile import Request, Result
from ome.framework.resources import CONFIGMAPS, NODES
from ome.omenative import force_delete
from ome.omenative import instance_names as names
from ome.omenative import migration_audit as audit
from ome.omenative.pods_view import format_time

Obj = dict[str, Any]
log = structlog.get_logger("ome.controllers.stuckdeletion")


class StuckDeletionReconciler:
    def __init__(self, client: Client, cache: SharedCache, settings: force_delete.Settings, *,
                 recorder: EventRecorder | None = None, now: Callable[[], datetime] | None = None) -> None:
        self._client = client
        self._cache = cache
        self._settings = settings
        self._recorder = recorder
        self._now = now or (lambda: datetime.now(UTC))
        self._reported: set[str] = set()
        self.writes = 0

    async def reconcile(self, req: Request) -> Result:
        replica = self._cache.get_or_none(INFERENCE_REPLICAS, req.name, req.namespace)
        if replica is None:
            return Result()
        meta = replica["metadata"]
        pods = owned_children(self._cache, PODS, replica)
        wake: float | None = None
        now = self._now()
        component = replica["spec"]["component"]
        for pod in pods:
            labels = pod["metadata"].get("labels") or {}
            index = int(labels.get(names.INSTANCE_INDEX_LABEL, "0") or 0)
            node_name = (pod.get("spec") or {}).get("nodeName")
            node = self._cache.get_or_none(NODES, node_name) if node_name else None
            decision, after = force_delete.decide(pod, node, component, index, now, self._settings)
            if after is not None:
                wake = after if wake is None else min(wake, after)
            if decision is None:
                continue
            uid = pod["metadata"].get("uid", "")
            if decision.action == force_delete.BLOCKED:
                if uid not in self._reported:
                    self._reported.add(uid)
                    await self._event(replica, "Warning", decision.action, decision.message)
                continue
            try:
                await self._client.delete(PODS, pod["metadata"]["name"], meta["namespace"], uid=uid,
                                          grace_period_seconds=0)
                self.writes += 1
            except (errors.NotFound, errors.Conflict):
                continue
            log.info("force-deleted a stuck pod", pod=pod["metadata"]["name"], evidence=decision.evidence)
            await self._event(replica, "Warning", decision.action, decision.message)
            await self._audit(replica, component, index, node_name or "")
        return Result(requeue_after=wake)

    async def _parent(self, replica: Obj) -> Obj | None:
        parent = ((replica.get("spec") or {}).get("parentRef") or {}).get("name")
        if not parent:
            return None
        return self._cache.get_or_none(INFERENCE_SERVICES, parent, replica["metadata"]["namespace"])

    async def _event(self, replica: Obj, type_: str, reason: str, message: str) -> None:
        if self._recorder is not None:
            target = await self._parent(replica) or replica
            self._recorder.event(target, "Warning" if type_ == "Warning" else "Normal", reason, message)

    async def _audit(self, replica: Obj, component: str, index: int, node: str) -> None:
        isvc = await self._parent(replica)
        if isvc is None:
            return  # the audit ConfigMap lives while the InferenceService does
        at = format_time(self._now().replace(microsecond=0))
        entry = {"requestUUID": str(uuid.uuid4()), "component": component, "sourceInstance": index,
                 "phase": "Completed", "reason": "ForceDelete", "fromNode": node, "startedAt": at,
                 "completedAt": at, "outcome": "force-delete-unreachable"}
        ns, cm_name = isvc["metadata"]["namespace"], audit.configmap_name(isvc["metadata"]["name"])
        with contextlib.suppress(errors.ApiError):
            try:
                current: Obj | None = await self._client.get(CONFIGMAPS, cm_name, ns)
            except errors.NotFound:
                current = None
            data = audit.configmap_data(audit.merge(audit.entries_of(current), [entry]))
            if current is None:
                await self._client.create(CONFIGMAPS, audit.configmap_body(isvc, data), ns)
            else:
                await self._client.update(CONFIGMAPS, {**current, "data": data})
            self.writes += 1


def replicas_on_node(cache: SharedCache) -> Callable[[Obj], Iterable[Request]]:
    """A Node event requeues the replicas with pods on it (their evidence may have changed)."""

    def owner(pod: Obj) -> Request | None:
        ref = next((r for r in pod["metadata"].get("ownerReferences") or []
                    if r.get("kind") == "InferenceReplica" and r.get("controller")), None)
        return Request(pod["metadata"]["namespace"], ref["name"]) if ref is not None else None

    return on_node(cache, owner)


def services_on_node(cache: SharedCache) -> Callable[[Obj], Iterable[Request]]:
    """A Node event requeues the InferenceServices with pods on it (the migration controller's key)."""

    def service(pod: Obj) -> Request | None:
        isvc = (pod["metadata"].get("labels") or {}).get(names.ISVC_LABEL)
        return Request(pod["metadata"]["namespace"], isvc) if isvc else None

    return on_node(cache, service)


def on_node(cache: SharedCache, key: Callable[[Obj], Request | None]) -> Callable[[Obj], Iterable[Request]]:
    def mapper(node: Obj) -> Iterable[Request]:
        name = node["metadata"]["name"]
        out = set()
        # Within the Instances' informer's selector: a list with none would need a cache of every pod.
        for pod in cache.list(PODS, label_selector={names.MANAGED_BY_LABEL: names.MANAGED_BY}):
            if (pod.get("spec") or {}).get("nodeName") == name and (req := key(pod)) is not None:
                out.add(req)
        return sorted(out, key=lambda r: (r.namespace, r.name))

    return mapper
