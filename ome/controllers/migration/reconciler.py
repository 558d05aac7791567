"""Migration reconciler (I/O): takes migration requests off an InferenceService and moves Instances.

Keyed by InferenceService. A pass (1) takes each `ome.io/migration-request-v1-<uuid>` annotation: a
request for a component the service lacks is rejected (MigrationRequestRejected, annotation removed);
one for a component without an InferenceReplica (RawDeployment) stays; otherwise it is recorded as
Accepted in the replica's `status.migrations`, a `Started` entry goes to the audit ConfigMap (under
migrationPolicy mode Never: recorded Failed at once, its rejection event and a Failed entry), and the
annotation is removed, in that order, so a crash between the writes repeats a write, never loses a
request. (2) For each of the service's replicas with records, runs `ome.omenative.migration_plan` and
writes what it says: rows and records in one status write, then pod deletions, gates and the surge's
pods, then events on the InferenceService, the audit ConfigMap and `status.migrationHistory`.

Ownership boundary: the InferenceReplica planner leaves a `Migrating` source row and the surge row
(operation type Migrate) alone and never counts the surge when it scales; the rollout planner starts
updates only on Ready/Failed rows. Status writes carry the resourceVersion, so a racing writer makes
ours fail with 409 and the pass requeues.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import structlog

from ome.api.resources import INFERENCE_REPLICAS, INFERENCE_SERVICES, PODS
from ome.controllers.inferencereplica.owned import owned_children, owned_revisions
from ome.controllers.rolloutcoordination import observe as coordination
from ome.controllers.serving_gate import set_serving_gate
from ome.framework import errors
from ome.framework.cache import SharedCache
from ome.framework.client import Client
from ome.framework.events import EventRecorder
from ome.framework.reconcile import Request, Result
from ome.framework.resources import CONFIGMAPS, NODES
from ome.omenative import instance_names as names
from ome.omenative import migration_audit as audit
from ome.omenative import migration_events as ev
from ome.omenative import migration_plan as mp
from ome.omenative import migration_relocate, pod_render, status, teardown
from ome.omenative import migration_request as mr
from ome.omenative.replica_spec import desired_replicas, instance_ready_timeout, min_ready_seconds
from ome.omenative.revisions import RevisionData
from ome.omenative.rollout_pods import rollout_pod

Obj = dict[str, Any]
log = structlog.get_logger("ome.controllers.migration")


@dataclass(frozen=True, kw_only=True, slots=True)
class MigrationSettings:
    caps: mp.Caps | None = None
    """lifecycle.audit; None: requests wait (MigrationPolicyUnconfigured)."""
    instance_ready_timeout: float | None = 1800.0
    stuck_grace: float | None = None
    columnar: bool = False
    auto_migrate_attempts: int | None = None
    """lifecycle.autoMigrate.maxAttempts; None: no automatic relocation."""
    force_delete: tuple[float, float] | None = None
    """lifecycle.forceDelete (overdueSlack, nodeUnreachableThreshold) seconds; None: escalation off."""
    event_component: str = "ome-inferencereplica-controller"
    max_concurrent_reconciles: int = 1


class MigrationReconciler:
    def __init__(
        self,
        client: Client,
        cache: SharedCache,
        settings: MigrationSettings,
        *,
        recorder: EventRecorder | None = None,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self._client = client
        self._cache = cache
        self._settings = settings
        self._recorder = recorder
        self._now = now or (lambda: datetime.now(UTC).replace(microsecond=0))
        self._blocked: dict[tuple[str, str], dict[int, str]] = {}
        self.writes = 0

    async def reconcile(self, req: Request) -> Result:
        isvc = self._cache.get_or_none(INFERENCE_SERVICES, req.name, req.namespace)
        if isvc is None or isvc["metadata"].get("deletionTimestamp"):
            return Result()
        await self._intake(isvc)
        wake: float | None = None
        for component in mr.COMPONENTS:
            replica = self._cache.get_or_none(
                INFERENCE_REPLICAS, names.component_name(req.name, component), req.namespace
            )
            if replica is None or teardown.deleting(replica):
                continue
            if self._settings.auto_migrate_attempts:
                replica, after = await self._relocate(isvc, replica)
                if after is not None:
                    wake = after if wake is None else min(wake, after)
            if not (replica.get("status") or {}).get("migrations"):
                continue
            after = await self._move(isvc, replica)
            if after is not None:
                wake = after if wake is None else min(wake, after)
        return Result(requeue_after=wake)

    # -- intake -------------------------------------------------------------------------------

    async def _intake(self, isvc: Obj) -> None:
        meta = isvc["metadata"]
        ns, name = meta["namespace"], meta["name"]
        annotations = meta.get("annotations") or {}
        done: list[str] = []
        for key in mr.request_keys(annotations):
            try:
                request = mr.parse(key, str(annotations[key]))
            except mr.RequestError as exc:
                reason = ev.UNSUPPORTED_SCHEMA if exc.schema else ev.REJECTED
                self._event(isvc, ev.WARNING, reason, ev.rejected(key.removeprefix(mr.PREFIX), exc.detail))
                done.append(key)
                continue
            if not isinstance((isvc.get("spec") or {}).get(request.component), dict):
                self._event(isvc, ev.WARNING, ev.REJECTED,
                            ev.rejected(request.uuid, ev.unknown_component(request.component)))
                done.append(key)
                continue
            replica = self._cache.get_or_none(
                INFERENCE_REPLICAS, names.component_name(name, request.component), ns
            )
            if replica is None:
                continue  # RawDeployment / MultiNode: no replica acts on it; it stays (documented)
            await self._accept(isvc, replica, request)
            done.append(key)
        if done:
            patch = {"metadata": {"annotations": dict.fromkeys(done)}}
            with contextlib.suppress(errors.NotFound):
                await self._client.patch(INFERENCE_SERVICES, name, patch, ns)
                self.writes += 1

    async def _accept(self, isvc: Obj, replica: Obj, request: mr.MigrationRequest) -> None:
        prev = replica.get("status") or {}
        records = list(prev.get("migrations") or [])
        if any(r.get("requestUUID") == request.uuid for r in records):
            return
        lifecycle = (replica.get("spec") or {}).get("lifecycle") or {}
        timeout = instance_ready_timeout(replica, self._settings.instance_ready_timeout)
        record, events = mp.intake(request.uuid, request.instance, request.from_node,
                                   request.hint_target_nodes, request.reason, self._now(), timeout,
                                   mp.mode_of(lifecycle))
        records.append(record)
        await self._client.update_status(INFERENCE_REPLICAS, {**replica, "status": {**prev,
                                                                                   "migrations": records}})
        self.writes += 1
        for type_, reason, message in events:
            self._event(isvc, type_, reason, message)
        entry = audit.started_entry(request.component, record, request.requested_by)
        if record["phase"] == mp.FAILED:  # born Failed (mode Never): its ledger row is the Failed one
            entry = {**audit.finished_entry(request.component, record),
                     **({"requestedBy": request.requested_by} if request.requested_by else {})}
        await self._audit(isvc, [entry])
        await self._history(isvc, [audit.history_entry(request.component, record, request.requested_by)])

    # -- moves --------------------------------------------------------------------------------

    async def _move(self, isvc: Obj, replica: Obj) -> float | None:
        meta, spec, prev = replica["metadata"], replica["spec"], replica.get("status") or {}
        key = (meta["namespace"], meta["name"])
        raw = owned_children(self._cache, PODS, replica)
        known = owned_revisions(self._cache, replica)
        pods = [p for one in raw if (p := rollout_pod(one)) is not None]
        nodes = {p["metadata"]["name"]: n for p in raw if (n := (p.get("spec") or {}).get("nodeName"))}
        lifecycle = spec.get("lifecycle") or {}
        mode = mp.mode_of(lifecycle)
        inp = mp.Inputs(
            namespace=meta["namespace"], replica=meta["name"], base=names.base_name(replica),
            component=spec["component"], records=list(prev.get("migrations") or []),
            rows=status.rows_of(prev), pods=pods, nodes=nodes, revisions=known, now=self._now(),
            mode=mode, caps=self._settings.caps,
            min_ready_seconds=min_ready_seconds(replica),
            paused=bool(spec.get("paused")), stuck_grace=self._settings.stuck_grace,
            blocked=self._blocked.pop(key, {}),
        )
        plan = mp.plan(inp)
        written = await self._write(replica, plan)
        await self._act(written, plan, known)
        for type_, reason, message in plan.events:
            self._event(isvc, type_, reason, message)
        if plan.finished:
            component = spec["component"]
            await self._audit(isvc, [audit.finished_entry(component, r) for r in plan.finished])
            await self._history(isvc, [audit.history_entry(component, r) for r in plan.finished])
        return plan.wake_after

    async def _write(self, replica: Obj, plan: mp.Plan) -> Obj:
        prev = replica.get("status") or {}
        rows = {int(r["index"]): r for r in status.rows_of(prev)}
        rows.update(plan.rows)
        for index in plan.removed:
            rows.pop(index, None)
        rewritten = ("instanceStatuses", "instanceStatusColumns", "instanceStatusEncoding", "migrations")
        new = {k: v for k, v in prev.items() if k not in rewritten}
        columnar = self._settings.columnar or prev.get("instanceStatusEncoding") == "ColumnarV2"
        new.update(status.instance_rows(sorted(rows.values(), key=lambda r: int(r["index"])), columnar))
        if plan.records:
            new["migrations"] = plan.records
        if new == prev:
            return replica
        updated = await self._client.update_status(INFERENCE_REPLICAS, {**replica, "status": new})
        self.writes += 1
        return updated

    async def _act(self, replica: Obj, plan: mp.Plan, known: Mapping[str, RevisionData]) -> None:
        ns = replica["metadata"]["namespace"]
        for name in sorted(set(plan.deletes)):
            with contextlib.suppress(errors.NotFound):
                await self._client.delete(PODS, name, ns)
                self.writes += 1
        for name in sorted(set(plan.close_gates)):
            await self._gate(ns, name, "False")
        for create in plan.creates:
            body = self._pod_body(replica, create, known, plan.avoid.get(create.index))
            try:
                await self._client.create(PODS, body, ns)
                self.writes += 1
            except errors.AlreadyExists:
                pass
            except (errors.Invalid, errors.Forbidden) as exc:
                key = (ns, replica["metadata"]["name"])
                self._blocked.setdefault(key, {})[create.index] = body["metadata"]["name"]
                log.info("Migration surge pod create refused", pod=body["metadata"]["name"], error=str(exc))
        for name in sorted(set(plan.open_gates)):
            await self._gate(ns, name, "True")

    def _pod_body(
        self, replica: Obj, create: Any, known: Mapping[str, RevisionData],
        avoid: tuple[str, tuple[str, ...]] | None,
    ) -> Obj:
        data = known[create.revision_hash]
        spec = replica["spec"]
        runner = next(r for r in data.runners if r.name == create.runner)
        ident = pod_render.PodIdentity(
            names.base_name(replica), spec["component"], create.index, create.incarnation, create.runner,
            create.ordinal, create.revision_hash, desired_replicas(replica),
            spec.get("topologyKey") or None,
            tuple(coordination.peer_env_for(self._cache, replica, create.revision_hash)),
        )
        body = pod_render.render_pod(replica, data, runner, ident)
        if avoid is not None:
            node, hints = avoid
            affinity = body["spec"].get("affinity")
            body["spec"]["affinity"] = migration_relocate.placement(affinity, [node], hints)
        return body

    async def _gate(self, ns: str, name: str, value: str) -> None:
        if await set_serving_gate(self._client, ns, name, value, self._now()):
            self.writes += 1

    async def _relocate(self, isvc: Obj, replica: Obj) -> tuple[Obj, float | None]:
        """Automatic relocation (ome.omenative.migration_relocate): records and rows in one status write,
        then the pods left behind are deleted (grace 0 on a dead node). Also: when to look again."""
        meta, spec, prev = replica["metadata"], replica["spec"], replica.get("status") or {}
        raw = owned_children(self._cache, PODS, replica)
        on = {n for p in raw if (n := (p.get("spec") or {}).get("nodeName"))}
        nodes = {n: self._cache.get_or_none(NODES, n) for n in on}
        lifecycle = spec.get("lifecycle") or {}
        threshold = self._settings.force_delete[1] if self._settings.force_delete else 300.0
        out = migration_relocate.plan(migration_relocate.Inputs(
            replica_uid=meta["uid"], component=spec["component"], records=list(prev.get("migrations") or []),
            rows=status.rows_of(prev), pods=raw, nodes=nodes, now=self._now(),
            max_attempts=self._settings.auto_migrate_attempts,
            mode=((lifecycle.get("migrationPolicy") or {}).get("mode")) or "Auto",
            not_ready_threshold=threshold,
        ))
        if not out.changed:
            return replica, out.wake_after
        rows = {int(r["index"]): r for r in status.rows_of(prev)} | out.rows
        keep = ("instanceStatuses", "instanceStatusColumns", "instanceStatusEncoding", "migrations")
        new = {k: v for k, v in prev.items() if k not in keep}
        columnar = self._settings.columnar or prev.get("instanceStatusEncoding") == "ColumnarV2"
        new.update(status.instance_rows(sorted(rows.values(), key=lambda r: int(r["index"])), columnar))
        new["migrations"] = out.records
        written = await self._client.update_status(INFERENCE_REPLICAS, {**replica, "status": new})
        self.writes += 1
        for name, force in out.deletes:
            with contextlib.suppress(errors.NotFound):
                grace = 0 if force else None
                await self._client.delete(PODS, name, meta["namespace"], grace_period_seconds=grace)
                self.writes += 1
        for type_, reason, message in out.events:
            self._event(isvc, type_, reason, message)
        return written, out.wake_after

    # -- records --------------------------------------------------------------------------------

    async def _audit(self, isvc: Obj, new: list[audit.Entry]) -> None:
        meta = isvc["metadata"]
        ns, cm_name = meta["namespace"], audit.configmap_name(meta["name"])
        try:
            current: Obj | None = await self._client.get(CONFIGMAPS, cm_name, ns)
        except errors.NotFound:
            current = None
        entries = audit.merge(audit.entries_of(current), new)
        data = audit.configmap_data(entries)
        if current is None:
            with contextlib.suppress(errors.AlreadyExists):
                await self._client.create(CONFIGMAPS, audit.configmap_body(isvc, data), ns)
                self.writes += 1
            return
        if current.get("data") != data:
            await self._client.update(CONFIGMAPS, {**current, "data": data})
            self.writes += 1

    async def _history(self, isvc: Obj, new: list[audit.Entry]) -> None:
        meta = isvc["metadata"]
        for _ in range(3):
            try:
                fresh = await self._client.get(INFERENCE_SERVICES, meta["name"], meta["namespace"])
            except errors.NotFound:
                return
            prev = fresh.get("status") or {}
            history = audit.merge_history(prev.get("migrationHistory") or [], new)
            if history == prev.get("migrationHistory"):
                return
            try:
                await self._client.update_status(
                    INFERENCE_SERVICES, {**fresh, "status": {**prev, "migrationHistory": history}}
                )
                self.writes += 1
                return
            except errors.Conflict:
                continue

    def _event(self, isvc: Obj, type_: str, reason: str, message: str) -> None:
        if self._recorder is not None:
            self._recorder.event(isvc, "Warning" if type_ == "Warning" else "Normal", reason, message)

    # -- cache --------------------------------------------------------------------------------

