"""InferenceReplica reconciler: I/O only. Reads the cache, asks `ome.omenative` what to do, writes it.

Every write is conditional on the cache disagreeing with the plan, so a reconcile of a settled replica
makes no API call. Pod creations and deletions are covered by expectations, since the pod cache lags
our own writes and a second pass must not create or delete again. As in kube-controller-manager, every
write of a batch is awaited (creations in slow-start batches of 1, 2, 4, ... that stop at the first
failing batch) and each creation or deletion that did not happen lowers the expectations, so a failed
write never leaves the replica waiting for an event that cannot come; while expectations are pending
the key is requeued after the expectations timeout, when they count as satisfied anyway.

At the default log level a replica that waits leaves a trace: a requeue after a conflict is logged
with its key, and an Instance operation (or the replica's expectations) that has waited for a while is
logged with what it waits on and since when, at most once per `WaitLog.every` per Instance.

A live replica carries the finalizer `ome.io/ir-teardown`; a deleted one is planned down to zero
Instances (drain, then delete) and lets go of the finalizer once no owned pod is left on a live read,
or at the teardown deadline (see `ome.omenative.teardown`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable, Coroutine, Hashable, Mapping
from datetime import UTC, datetime
from functools import partial
from typing import Any, Final

import structlog

from ome.api import resources
from ome.api.resources import CONTROLLER_REVISIONS, INFERENCE_REPLICAS, PODS, SERVICES
from ome.config.durations import parse_duration
from ome.controllers import drift, quota_view
from ome.controllers.inferencereplica import create_holds, status_defer
from ome.controllers.inferencereplica.create_holds import CreateHolds
from ome.controllers.rolloutcanary import hold as held
from ome.controllers.rolloutcoordination import observe as coordination
from ome.controllers.serving_gate import set_serving_gate
from ome.framework import errors, together
from ome.framework.cache import SharedCache
from ome.framework.client import Client
from ome.framework.events import EventRecorder
from ome.framework.expectations import EXPECTATIONS_TIMEOUT, ControllerExpectations
from ome.framework.post_creates import USER_AGENT_MANAGER, PostCreates
from ome.framework.reconcile import Request, Result
from ome.framework.write_behind import WriteBehind
from ome.framework.written import CACHE_LAG_REQUEUE, WrittenVersions
from ome.omenative import instance_names as names
from ome.omenative import (
    instances,
    migration_relocate,
    operation_holds,
    pod_batching,
    pod_render,
    podmonitor,
    revisions,
    rollout_gang,
    scale_down_metrics,
    services,
    status,
    status_metrics,
    teardown,
    waits,
)
from ome.omenative.gang_timeout import schedule_timeout_seconds, timeout_patches
from ome.omenative.pods_view import PodView, format_time, view
from ome.omenative.revisions import RevisionData
from ome.omenative.settings import InferenceReplicaSettings

Obj = dict[str, Any]

PODGROUPS: Final = resources.register(
    resources.Resource(
        "scheduling.x-k8s.io", "v1alpha1", "PodGroup", "podgroups", True, frozenset({"status"})
    )
)
OWNER_INDEX: Final = "owner"
log = structlog.get_logger("ome.controllers.inferencereplica")


class InferenceReplicaReconciler:
    def __init__(
        self,
        client: Client,
        cache: SharedCache,
        settings: InferenceReplicaSettings,
        *,
        expectations: ControllerExpectations | None = None,
        recorder: EventRecorder | None = None,
        now: Callable[[], datetime] | None = None,
        expectations_timeout: float = EXPECTATIONS_TIMEOUT,
        wait_log: waits.WaitLog | None = None,
        write_behind: WriteBehind | None = None,
    ) -> None:
        self._client = client
        self._behind = write_behind
        # Its Services were POSTed without a field manager before (recorded as the user agent's name).
        self._posts = PostCreates(client, also=(USER_AGENT_MANAGER,))
        self._written: WrittenVersions = getattr(client, "written", None) or WrittenVersions()
        self._written.track(INFERENCE_REPLICAS)
        self._cache = cache
        self._settings = settings
        self.expectations = expectations or ControllerExpectations(ttl=expectations_timeout)
        self._expectations_timeout = expectations_timeout
        self._waits = wait_log or waits.WaitLog()
        self._recorder = recorder
        self._now = now or (lambda: datetime.now(UTC).replace(microsecond=0))
        self._gang: bool | None = None
        self._scale_down = scale_down_metrics.ScaleDownSeries()
        self._group_timeouts: dict[tuple[str, str], tuple[str, Any]] = {}
        """(uid, generation) of each replica whose PodGroups carry this process's gang schedule timeout."""
        self._holds = CreateHolds()
        """What held this pass's pod creates, per Instance (`operation.waiting`)."""
        self.writes = 0
        """API writes made, for tests and benchmarks (a no-op reconcile adds none)."""

    async def reconcile(self, req: Request) -> Result:
        try:
            return await self._reconcile(req)
        except errors.Conflict as exc:
            # Someone wrote the replica after our cache read it: retried (with backoff) from the cache.
            log.info("Conflict writing the InferenceReplica; requeued", key=f"{req.namespace}/{req.name}",
                     error=str(exc))
            raise

    async def _reconcile(self, req: Request) -> Result:
        key = (req.namespace, req.name)
        replica = self._cache.get_or_none(INFERENCE_REPLICAS, req.name, req.namespace)
        if replica is None:
            self.expectations.delete(key)
            self._waits.forget(key)
            self._scale_down.forget(key)
            self._group_timeouts.pop(key, None)
            return Result()
        if self._written.behind(replica):
            # The cache has not shown our last write of this replica (ours or the rollout's): a plan from
            # the older status recreates a pod the rollout just drained. The write's event requeues it;
            # a wait that lasts is logged like any other.
            cached = replica["metadata"].get("resourceVersion")
            self._log_gate_wait(key, "cache", f"the cache to show this process's last write of the replica "
                                              f"(cached resourceVersion {cached})")
            return Result(requeue_after=CACHE_LAG_REQUEUE)
        if not self.expectations.satisfied(key):
            # The pending pod events requeue this key; should they never come, the expectations expire
            # after their timeout, and this requeue finds them satisfied.
            adds, deletes = self.expectations.pending(key)
            wake = self._log_gate_wait(key, "expectations", f"{max(adds, 0)} pod creation(s) and "
                                                            f"{max(deletes, 0)} deletion(s) to be observed")
            return Result(requeue_after=min(self._expectations_timeout, wake or self._expectations_timeout))
        if teardown.deleting(replica):
            return await self._teardown(replica)
        data = revisions.from_replica(replica)
        if data is None:
            return Result()  # modelRef/runtimeRef rendering is the InferenceService controller's job
        digest = revisions.revision_hash(data, revisions.collision_count(replica))  # once a pass: a JSON dump
        # Independent writes, made together: a new replica's first pass waits one round trip, not two.
        replica, known = await together.all_settled(
            self._ensure_finalizer(replica), self._ensure_revision(replica, data, digest)
        )
        if known is None:
            return Result()  # the collisionCount bump requeues this key
        pods = [v for p in self._owned(PODS, replica) if (v := view(p)) is not None]
        ctx = self._context(replica, digest, known)
        try:
            rows = status.decode_rows(replica.get("status") or {}, self._settings.max_decoded_instances)
        except status.DecodeFailed as exc:  # OME stops managing it until the bound is raised or restored
            status_metrics.CODEC_ERRORS.labels(exc.reason).inc()
            if self._recorder is not None:
                self._recorder.event(replica, "Warning", status_metrics.DECODE_FAILED,
                                     status_metrics.decode_failed_message(replica, exc.reason))
            return Result()
        plan = instances.plan(ctx, rows, pods)
        self._batch_scale_up(key, plan)
        wake = self._log_instance_waits(key, ctx, plan, pods)  # before the writes: one may fail
        self._holds.begin(key)
        try:
            # The Services follow the rows' revisions, which no pod write of this pass changes (a hold
            # only marks an operation as waiting): they go out beside the pod writes. The pod writes'
            # failure is the one raised; either one failing leaves the status unwritten.
            await together.all_settled(
                self._apply(replica, ctx, plan, known),
                self._ensure_services(replica, data, digest, known, plan.rows),
                self._ensure_pod_monitor(replica, data),
            )
        finally:
            holds = self._holds.end(key)
        plan.rows = operation_holds.settle(plan.rows, holds, ctx.now, ctx.ready_timeout)
        await self._sync_pod_group_timeouts(key, replica, ctx)
        await self._prune_revisions(replica, known, plan.rows, ctx.update_revision)
        await self._write_status(replica, ctx, plan, pods, known)
        self._report_scale_down(key, ctx, plan)
        quota = quota_view.QUOTA_RECHECK if operation_holds.QUOTA_EXCEEDED in holds.values() else None
        group = (create_holds.POD_GROUP_RECHECK
                 if operation_holds.POD_GROUP_TERMINATING in holds.values() else None)
        return Result(requeue_after=_earliest(plan.wake_after, wake, quota, group))

    def _batch_scale_up(self, key: tuple[str, str], plan: instances.Plan) -> None:
        """lifecycle.scaleUpPodBatchSize: the Instances whose missing pods are created this pass; the rest
        wait for a later pass (the admitted pods' events bring it)."""
        budget = self._settings.scale_up_pod_batch_size
        admitted, deferred = pod_batching.admit_scale_up(plan.creates, budget)
        if deferred:
            log.info("OMENative scale-up batch", key=f"{key[0]}/{key[1]}", podBudget=budget,
                     admittedInstances=len(admitted), deferredInstances=len(deferred),
                     admittedPods=sum(len(c.names) for c in admitted))
            plan.creates = admitted

    def _report_scale_down(self, key: tuple[str, str], ctx: instances.Context, plan: instances.Plan) -> None:
        """The `OMENative scale-down wave` line and series of configure-pod-batching.md, after the status
        write that admitted the wave (a failed write reports nothing)."""
        identity = (key[0], ctx.base, ctx.component)
        self._scale_down.report(key, identity, plan.scale_down)
        if plan.scale_down is not None:
            log.info("OMENative scale-down wave", namespace=key[0], isvc=ctx.base, component=ctx.component,
                     **plan.scale_down.summary())

    # -- waits --------------------------------------------------------------------------------

    def _log_instance_waits(
        self, key: tuple[str, str], ctx: instances.Context, plan: instances.Plan, pods: list[PodView]
    ) -> float | None:
        by_index: dict[int, list[PodView]] = {}
        for pod in pods:
            by_index.setdefault(pod.index, []).append(pod)
        found: dict[Hashable, str] = {}
        ops: dict[Hashable, Obj] = {}
        for row in plan.rows:
            data = ctx.revisions.get(names.hash_of_revision(row.get("runningRevision") or ""))
            reason = waits.waiting_on(row, by_index.get(int(row["index"]), []), data)
            if reason is not None:
                found[int(row["index"])] = reason
                ops[int(row["index"])] = row
        return self._report_waits(key, *self._waits.update(key, found, self._now()), ops)

    def _log_gate_wait(self, key: tuple[str, str], gate: str, reason: str) -> float | None:
        """A pass held before planning: its wait joins the Instances' (`WaitLog.add`)."""
        return self._report_waits(key, *self._waits.add(key, gate, reason, self._now()))

    def _report_waits(
        self, key: tuple[str, str], due: list[waits.Due], wake: float | None,
        rows: Mapping[Hashable, Obj] | None = None,
    ) -> float | None:
        """Log the waits that are due (see `waits.WaitLog`); returns when the next line is due."""
        for wait in due:
            row = (rows or {}).get(wait.instance) or {}
            operation = row.get("operation") or {}
            log.info(
                "InferenceReplica waiting",
                key=f"{key[0]}/{key[1]}",
                instance=wait.instance,
                phase=row.get("phase"),
                operation=operation.get("type"),
                step=operation.get("step"),
                waiting_on=wait.reason,
                since=format_time(wait.since),
                operation_started=operation.get("startedAt"),
            )
        return wake

    # -- teardown -----------------------------------------------------------------------------

    async def _ensure_finalizer(self, replica: Obj) -> Obj:
        """The teardown finalizer, on every live replica (put back if someone strips it)."""
        if teardown.has_finalizer(replica):
            return replica
        meta = replica["metadata"]
        updated = await self._client.patch(
            INFERENCE_REPLICAS, meta["name"], teardown.add_patch(replica), meta["namespace"]
        )
        self.writes += 1
        return updated

    async def _teardown(self, replica: Obj) -> Result:
        """A deleted replica: plan every Instance away (drain, then delete the pods), and remove the
        finalizer once no owned pod is left, or at the teardown deadline."""
        if not teardown.has_finalizer(replica):
            return Result()  # the garbage collector owns the cleanup
        owned = self._owned(PODS, replica)
        now = self._now()
        decision = teardown.decide(
            replica,
            pods_left=len(owned),
            groups_left=0,
            deadline=self._settings.teardown_deadline,
            now=now,
        )
        if decision.release and decision.event is None and await self._live_pods(replica):
            return Result(requeue_after=1.0)  # the cache lags the apiserver; look again shortly
        if decision.event is not None and self._recorder is not None:
            self._recorder.event(replica, "Warning", *decision.event)
        if decision.release:
            await self._remove_finalizer(replica)
            return Result()
        known = self._known_revisions(replica)
        data = revisions.from_replica(replica)
        previous = (replica.get("status") or {}).get("updateRevision") or ""
        digest = (
            revisions.revision_hash(data, revisions.collision_count(replica))
            if data
            else names.hash_of_revision(previous)
        )
        pods = [v for p in owned if (v := view(p)) is not None]
        ctx = self._context(replica, digest, known, desired=0)
        plan = instances.plan(ctx, status.rows_of(replica.get("status") or {}), pods)
        key = (replica["metadata"]["namespace"], replica["metadata"]["name"])
        wake = self._log_instance_waits(key, ctx, plan, pods)
        await self._apply(replica, ctx, plan, known)
        await self._write_status(replica, ctx, plan, pods, known)
        self._report_scale_down(key, ctx, plan)
        return Result(requeue_after=_earliest(plan.wake_after, decision.requeue_after, wake))

    async def _live_pods(self, replica: Mapping[str, Any]) -> list[Obj]:
        """Owned pods on a live read: the finalizer comes off only once the apiserver has none."""
        meta = replica["metadata"]
        selector = names.selector_labels(names.base_name(replica), replica["spec"]["component"])
        items, _ = await self._client.list(PODS, meta["namespace"], label_selector=selector)
        return [
            p
            for p in items
            if any(r.get("uid") == meta["uid"] for r in p["metadata"].get("ownerReferences") or [])
        ]

    async def _remove_finalizer(self, replica: Obj) -> None:
        meta = replica["metadata"]
        with contextlib.suppress(errors.NotFound):
            await self._client.patch(
                INFERENCE_REPLICAS, meta["name"], teardown.remove_patch(replica), meta["namespace"]
            )
            self.writes += 1
        self.expectations.delete((meta["namespace"], meta["name"]))
        log.info("teardown complete; finalizer removed", namespace=meta["namespace"], name=meta["name"])

    # -- observe ------------------------------------------------------------------------------

    def _owned(self, res: resources.Resource, replica: Mapping[str, Any]) -> list[Obj]:
        meta = replica["metadata"]
        return self._cache.list(res, meta["namespace"], index=(OWNER_INDEX, meta["uid"]))

    def _context(
        self, replica: Obj, digest: str, known: Mapping[str, RevisionData], *, desired: int | None = None
    ) -> instances.Context:
        spec = replica["spec"]
        lifecycle = spec.get("lifecycle") or {}
        base = names.base_name(replica)
        return instances.Context(
            base=base,
            component=spec["component"],
            desired=desired_replicas(replica) if desired is None else desired,
            update_revision=names.revision_name(base, spec["component"], digest),
            update_hash=digest,
            revisions=known,
            now=self._now(),
            ready_timeout=self._ready_timeout(replica),
            drain_timeout=self._settings.drain_timeout,
            min_ready_seconds=min_ready_seconds(replica),
            restart_policy=lifecycle.get("restartPolicy"),
            retry_delay=self._settings.retry_initial_delay,
            retry_multiplier=self._settings.retry_multiplier,
            retry_max_delay=self._settings.retry_max_delay,
            paused=bool(spec.get("paused")),
            replica=f"{replica['metadata'].get('namespace', '')}/{replica['metadata']['name']}",
            start_hash=held.start_hash(self._cache, replica, digest, known),
            scale_down_budget=self._settings.scale_down_pod_batch_size,
            scale_down_requeue=self._settings.scale_down_requeue_interval,
        )

    def _ready_timeout(self, replica: Mapping[str, Any]) -> float | None:
        lifecycle = (replica.get("spec") or {}).get("lifecycle") or {}
        own = parse_duration(lifecycle.get("instanceReadyTimeout"))
        return own if own else self._settings.instance_ready_timeout  # "0s" counts as unset

    # -- revisions ----------------------------------------------------------------------------

    def _known_revisions(self, replica: Obj) -> dict[str, RevisionData]:
        return {
            r["metadata"].get("labels", {}).get(names.REVISION_HASH_LABEL, ""): revisions.from_json(r["data"])
            for r in self._owned(CONTROLLER_REVISIONS, replica)
            if r.get("data")
        }

    async def _ensure_revision(
        self, replica: Obj, data: RevisionData, digest: str
    ) -> dict[str, RevisionData] | None:
        """Revision data by hash: every owned ControllerRevision plus the spec's (`digest`), created if
        new. None when another object holds the spec's revision name: status.collisionCount goes up
        instead."""
        known = self._known_revisions(replica)
        if digest in known:
            return known
        owned = self._owned(CONTROLLER_REVISIONS, replica)
        body = revisions.controller_revision(replica, data, revisions.next_number(owned), digest)
        meta = body["metadata"]
        try:
            await self._client.create(CONTROLLER_REVISIONS, body, meta["namespace"])
            self.writes += 1
        except errors.AlreadyExists:
            existing = await self._client.get(CONTROLLER_REVISIONS, meta["name"], meta["namespace"])
            if not revisions.is_ours(existing, replica, data):
                await self._bump_collision_count(replica)
                return None
        known[digest] = data
        return known

    async def _bump_collision_count(self, replica: Obj) -> None:
        count = revisions.collision_count(replica) + 1
        body = {**replica, "status": {**(replica.get("status") or {}), "collisionCount": count}}
        await self._client.update_status(INFERENCE_REPLICAS, body)
        self.writes += 1
        log.info("controllerrevision name collision", name=replica["metadata"]["name"], collision_count=count)

    async def _prune_revisions(
        self, replica: Obj, known: Mapping[str, RevisionData], rows: list[Obj], update: str
    ) -> None:
        live = {update, (replica.get("status") or {}).get("currentRevision") or update}
        live |= {r.get("runningRevision") or "" for r in rows} | {r.get("targetRevision") or "" for r in rows}
        limit = (replica.get("spec") or {}).get(
            "revisionHistoryLimit"
        ) or self._settings.revision_history_limit
        for name in revisions.prunable(self._owned(CONTROLLER_REVISIONS, replica), live, limit):
            await self._delete(CONTROLLER_REVISIONS, name, replica["metadata"]["namespace"])

    # -- pods -------------------------------------------------------------------------------

    async def _apply(
        self, replica: Obj, ctx: instances.Context, plan: instances.Plan, known: Mapping[str, RevisionData]
    ) -> None:
        """Make the plan's pod writes. Every write is attempted and awaited (creations in slow-start
        batches), each one that did not happen lowers the expectations, then the first error is raised."""
        ns = replica["metadata"]["namespace"]
        key = (ns, replica["metadata"]["name"])
        bodies = [self._pod_bodies(replica, ctx, create, known) for create in plan.creates]
        todo = [body for group in bodies for body in group]
        deletes = sorted(set(plan.deletes))
        if todo or deletes:
            self.expectations.expect_creations(key, len(todo))
            self.expectations.raise_expectations(key, deletes=len(deletes))
        failures: list[BaseException] = []
        if todo:
            try:
                await self._ensure_pod_groups(replica, ctx, plan)
                kept = self._holds.unheld(key, todo)  # none join a PodGroup on its way out
                for _ in range(len(todo) - len(kept)):
                    self.expectations.creation_observed(key)
                todo = kept
            except Exception as exc:  # no pod is created without its PodGroup: none of them will arrive
                self._skip_creations(key, len(todo), exc)
                failures.append(exc)
                todo = []
        failures += await self._create_pods(key, todo)
        failures += together.failures(await asyncio.gather(
            *(self._delete_pod(key, name, ns) for name in deletes), return_exceptions=True
        ))
        gates = [(name, "True") for name in sorted(set(plan.open_gates))]
        gates += [(name, "False") for name in sorted(set(plan.close_gates))]
        failures += together.failures(await asyncio.gather(
            *(self._set_gate(ns, name, value) for name, value in gates), return_exceptions=True
        ))
        for index in plan.removed:
            if self._gang:
                await self._delete(PODGROUPS, names.pod_group_name(ctx.base, ctx.component, index), ns)
        # A quota refusal is a hold (operation.waiting), retried on quota events, not an error.
        failures = [f for f in failures if not quota_view.is_quota_refusal(f)]
        if failures:
            raise next((f for f in failures if isinstance(f, Exception)), failures[0])

    async def _create_pods(self, key: tuple[str, str], bodies: list[Obj]) -> list[BaseException]:
        """kube-controller-manager's slowStartBatch: batches of 1, 2, 4, ... pods, each awaited whole;
        after a batch with a failure the rest are skipped (a quota or admission rule that rejects one
        pod rejects the others too) and their expected creations lowered."""
        batch, start = 1, 0
        while start < len(bodies):
            chunk = bodies[start : start + batch]
            start += len(chunk)
            failed = together.failures(await asyncio.gather(
                *(self._create_pod(key, body) for body in chunk), return_exceptions=True
            ))
            if failed:
                self._skip_creations(key, len(bodies) - start, failed[0])
                if quota_view.is_quota_refusal(failed[0]):
                    self._holds.quota_refused(key, bodies[start:])
                return failed
            batch *= 2
        return []

    def _skip_creations(self, key: tuple[str, str], count: int, cause: BaseException) -> None:
        if count <= 0:
            return
        log.info("Slow-start failure; skipping pod creations and lowering expectations",
                 key=f"{key[0]}/{key[1]}", skipped=count, error=str(cause))
        for _ in range(count):
            self.expectations.creation_observed(key)

    def _pod_bodies(
        self,
        replica: Obj,
        ctx: instances.Context,
        create: instances.PodCreate,
        known: Mapping[str, RevisionData],
    ) -> list[Obj]:
        data = known[create.revision_hash]
        ident = pod_render.PodIdentity(
            ctx.base,
            ctx.component,
            create.index,
            create.incarnation,
            "",
            0,
            create.revision_hash,
            ctx.desired,
            (replica["spec"].get("topologyKey") or None),
            tuple(coordination.peer_env_for(self._cache, replica, create.revision_hash)),
        )
        bodies = [
            p for p in pod_render.instance_pods(replica, data, ident) if p["metadata"]["name"] in create.names
        ]
        if not data.multi_pod and not bodies:
            # A single-pod Instance sits at its activeOrdinal, 1 after a SurgeThenDrain update: a restart
            # there rebuilds the pod under that name and ordinal.
            runner = data.runners[0]
            one = dataclasses.replace(ident, runner=runner.name, ordinal=1)
            bodies = [p for p in [pod_render.render_pod(replica, data, runner, one)]
                      if p["metadata"]["name"] in create.names]
        # An Instance OME relocated avoids the nodes it left (ome.omenative.migration_relocate).
        avoid = migration_relocate.avoided_nodes(replica.get("status"), create.index)
        for body in bodies if avoid else ():
            body["spec"]["affinity"] = migration_relocate.placement(body["spec"].get("affinity"), avoid)
        return bodies

    async def _create_pod(self, key: tuple[str, str], body: Obj) -> None:
        try:
            await self._create(PODS, body, swallow_exists=False)
        except errors.AlreadyExists:
            self.expectations.creation_observed(key)  # no event will arrive for a pod we did not make
        except BaseException as exc:  # a cancelled create too: it may never reach the apiserver
            self.expectations.creation_observed(key)
            if quota_view.is_quota_refusal(exc):
                self._holds.quota_refused(key, [body])
            raise

    async def _delete_pod(self, key: tuple[str, str], name: str, ns: str) -> None:
        # Pod names repeat across incarnations: the uid precondition makes sure this delete (or a
        # transport retry of it) never takes the next incarnation's pod of the same name.
        cached = self._cache.get_or_none(PODS, name, ns)
        uid = (cached or {}).get("metadata", {}).get("uid")
        try:
            await self._client.delete(PODS, name, ns, uid=uid)
            self.writes += 1
        except (errors.NotFound, errors.Conflict) as exc:  # gone, or another pod now holds the name
            self.expectations.deletion_observed(key)
            # Usual when someone else deleted it first (the pod GC, a user); said, because a pass that
            # meets this again and again plans from a pod the watch never removed from the cache.
            log.info("Pod to delete already gone", key=f"{key[0]}/{key[1]}", pod=name, uid=uid,
                     status=exc.status)
        except BaseException:
            self.expectations.deletion_observed(key)
            raise

    async def _set_gate(self, ns: str, name: str, value: str) -> None:
        """The serving readiness gate: the kubelet (kwok here) folds it into the pod's Ready."""
        if await set_serving_gate(self._client, ns, name, value, self._now()):
            self.writes += 1

    async def _ensure_pod_groups(self, replica: Obj, ctx: instances.Context, plan: instances.Plan) -> None:
        multi = [c for c in plan.creates if ctx.revisions[c.revision_hash].multi_pod]
        if not multi:
            return
        if self._gang is None:
            self._gang = await self._client.is_served(PODGROUPS)
        if not self._gang:
            return
        timeout = schedule_timeout_seconds(ctx.ready_timeout, self._settings.gang_schedule_timeout)
        for create in multi:
            members = ctx.revisions[create.revision_hash].pod_count
            body = rollout_gang.pod_group(replica, ctx.base, ctx.component, create.index, members, timeout)
            outcome = await create_holds.ensure_pod_group(self._client, PODGROUPS, body)
            if outcome == create_holds.CREATED:
                self.writes += 1
            elif outcome == create_holds.TERMINATING:
                key = (replica["metadata"]["namespace"], replica["metadata"]["name"])
                self._holds.hold(key, create.index, operation_holds.POD_GROUP_TERMINATING)

    async def _sync_pod_group_timeouts(
        self, key: tuple[str, str], replica: Obj, ctx: instances.Context
    ) -> None:
        """Existing PodGroups take the current scheduleTimeoutSeconds (gang-scheduling.md: "OME updates
        existing PodGroups to the new timeout"). The setting is read at start and the ready timeout is in
        the spec, so one list per replica generation in this process is enough."""
        meta = replica["metadata"]
        mark = (meta["uid"], meta.get("generation"))
        if self._group_timeouts.get(key) == mark:
            return
        if self._gang is None:
            self._gang = await self._client.is_served(PODGROUPS)
        if self._gang:
            selector = names.selector_labels(ctx.base, ctx.component)
            groups, _ = await self._client.list(PODGROUPS, meta["namespace"], label_selector=selector)
            want = schedule_timeout_seconds(ctx.ready_timeout, self._settings.gang_schedule_timeout)
            for name, patch in timeout_patches(groups, want):
                with contextlib.suppress(errors.NotFound):
                    await self._client.patch(PODGROUPS, name, patch, meta["namespace"])
                    self.writes += 1
        self._group_timeouts[key] = mark

    # -- services -----------------------------------------------------------------------------

    async def _ensure_services(
        self, replica: Obj, data: RevisionData, digest: str, known: Mapping[str, RevisionData],
        rows: list[Obj],
    ) -> None:
        """The replica's headless Service and each live revision's Services (`digest`: the spec's)."""
        live = {names.hash_of_revision(r.get("runningRevision") or "") for r in rows}
        live.add(digest)
        desired = [services.headless_service(replica, data)]
        for revision in sorted(live & set(known)):
            desired += services.revision_services(replica, revision, known[revision])
        existing = {s["metadata"]["name"]: s for s in self._owned(SERVICES, replica)}
        writes: list[Coroutine[Any, Any, None]] = []
        ns = replica["metadata"]["namespace"]
        for body in map(drift.stamp, desired):
            current = existing.pop(body["metadata"]["name"], None)
            if current is None:
                if not self._create_behind(Request(ns, replica["metadata"]["name"]), body):
                    writes.append(self._create_service(body))
            elif drift.reasons(body, current):
                writes.append(self._apply_owned(SERVICES, body, current))
        for name, stale in existing.items():
            if (stale["metadata"].get("labels") or {}).get(services.REVISION_SERVICE_LABEL):
                writes.append(self._delete(SERVICES, name, replica["metadata"]["namespace"]))
        await together.all_settled(*writes)  # each Service on its own: one round trip for all of them

    def _create_behind(self, owner: Request, body: Obj) -> bool:
        """Whether the Service's create is on its way beside this pass (framework/write_behind.py): a
        ClusterIP create waits for the apiserver's allocator, and the pass need not."""
        if self._behind is None:
            return False
        key = (SERVICES.name, body["metadata"]["namespace"], body["metadata"]["name"])
        if self._behind.in_flight(key) is not None:
            return True  # its name carries its revision: the content in flight is the content wanted
        # False (inline) when there is no room, or its last create here failed: its error reaches this pass.
        create = partial(self._create_owned, SERVICES, body)
        return self._behind.start(key, drift.desired_hash(body), owner, create)

    async def _create_service(self, body: Obj) -> None:
        await self._create_owned(SERVICES, body)
        if self._behind is not None:
            self._behind.clear((SERVICES.name, body["metadata"]["namespace"], body["metadata"]["name"]))

    async def _create_owned(self, res: resources.Resource, body: Obj) -> None:
        """POST a child this controller converges by apply later (framework/post_creates.py); one that
        exists already is left to the next pass's comparison."""
        if await self._posts.create(res, body, self._settings.serving_gate_controller) is not None:
            self.writes += 1

    async def _apply_owned(self, res: resources.Resource, body: Obj, current: Mapping[str, Any]) -> None:
        """Apply a drifted or changed child, its created fields moved to the apply entry first."""
        await self._posts.apply(res, body, current, self._settings.serving_gate_controller)
        self.writes += 1

    # -- monitoring ---------------------------------------------------------------------------

    async def _ensure_pod_monitor(self, replica: Obj, data: RevisionData) -> None:
        """The replica's PodMonitor, when the CRD was served at start; a same-named PodMonitor that
        another owner holds is left alone."""
        if not self._settings.pod_monitor_served:
            return
        body = drift.stamp(podmonitor.pod_monitor(replica, data, self._settings))
        existing = {m["metadata"]["name"]: m for m in self._owned(podmonitor.POD_MONITORS, replica)}
        current = existing.get(body["metadata"]["name"])
        if current is None:
            await self._create_owned(podmonitor.POD_MONITORS, body)
        elif drift.reasons(body, current):
            await self._apply_owned(podmonitor.POD_MONITORS, body, current)

    # -- status -------------------------------------------------------------------------------

    async def _write_status(
        self,
        replica: Obj,
        ctx: instances.Context,
        plan: instances.Plan,
        pods: list[PodView],
        known: Mapping[str, RevisionData],
    ) -> None:
        inputs = status.Inputs(
            replica=replica,
            rows=plan.rows,
            pods=pods,
            revisions=known,
            desired=ctx.desired,
            update_revision=ctx.update_revision,
            now=ctx.now,
            min_ready_seconds=ctx.min_ready_seconds,
            ready_timeout_configured=ctx.ready_timeout is not None,
            ready_timeout=ctx.ready_timeout,
            gang_scheduling_available=self._gang is not False,
            migration_audit_configured=self._settings.migration_audit_configured,
            columnar=self._settings.status_encoding == "ColumnarV2",
            max_rows=self._settings.max_decoded_instances,
        )
        new = status.compute(inputs)
        old = replica.get("status") or {}
        if status_defer.gate_follows(old, new, opened_gates=plan.open_gates, events=plan.events):
            plan.wake(status_defer.GATE_RECHECK)  # the pods' Ready brings the pass that writes
        elif (wait := status_defer.start_counts_wait(old, new, now=ctx.now, events=plan.events)) is not None:
            plan.wake(wait)  # the pods' start brings the pass that writes
        elif new != old:
            await self._update_status(replica, new)
            log.debug("status updated", replicas=new.get("replicas"), ready=new.get("readyReplicas"))
        # After the write: a once-only event is stamped in `announced` by the write that follows it.
        for type_, reason, message in plan.events:
            if self._recorder is not None:
                # Instance events are for the user: on the InferenceService, as documented (troubleshoot,
                # Instances fail; instance-restart-policy); a standalone replica has none and keeps them.
                target = _parent_service(replica) if reason in _INSTANCE_EVENTS else None
                self._recorder.event(target or replica, "Warning" if type_ == "Warning" else "Normal", reason,
                                     message)

    async def _update_status(self, replica: Obj, new: Obj) -> None:
        """Write the status planned from `replica`. The status is the Instances' memory (phase,
        operation, step), and the pod writes of this pass already followed it: a 409 caused only by
        someone else's metadata write (same status, same generation on a live read) must not lose it,
        so it is written again on the fresh object. Any other 409 is raised: the pass was planned
        from a stale status and is redone from the cache."""
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
            if too_large and self._recorder is not None:  # stalls until the status fits
                self._recorder.event(replica, "Warning", status_metrics.SIZE_EXCEEDED,
                                     status_metrics.size_exceeded_message(replica, new))
            raise
        self.writes += 1
        converted = status_metrics.record_write(replica, previous, new, "success")
        if converted is not None and self._recorder is not None:
            self._recorder.event(replica, "Normal", status_metrics.CONVERTED,
                                 status_metrics.converted_message(replica, converted))

    # -- writes -------------------------------------------------------------------------------

    async def _create(self, res: resources.Resource, body: Obj, *, swallow_exists: bool = True) -> None:
        try:
            await self._client.create(res, body, body["metadata"]["namespace"])
            self.writes += 1
        except errors.AlreadyExists:
            if not swallow_exists:
                raise

    async def _delete(self, res: resources.Resource, name: str, ns: str) -> None:
        with contextlib.suppress(errors.NotFound):
            await self._client.delete(res, name, ns)
            self.writes += 1


def _earliest(*waits: float | None) -> float | None:
    known = [w for w in waits if w is not None]
    return min(known) if known else None


def desired_replicas(replica: Mapping[str, Any]) -> int:
    """spec.replicas; unset means 1, and no replica scales to zero: an OMENative component keeps at
    least one Instance (the autoscaler controller then sets a projected replica's count back to its
    minReplicas)."""
    spec = replica.get("spec") or {}
    value = spec.get("replicas")
    if value is None:
        return 1
    return max(int(value), 1)


def min_ready_seconds(replica: Mapping[str, Any]) -> int:
    spec = replica.get("spec") or {}
    value = spec.get("minReadySeconds")
    if value is None:
        value = (spec.get("lifecycle") or {}).get("minReadySeconds")
    return int(value or 0)


_INSTANCE_EVENTS: Final = frozenset(
    {"InstanceFailed", "RestartTriggered", "RestartCompleted", "TerminalPodRecycled", "FoundOrphan"}
)


def _parent_service(replica: Mapping[str, Any]) -> Obj | None:
    """The InferenceService owning a projected replica, as an event's involved object; None if standalone."""
    meta = replica.get("metadata") or {}
    owner = next((o for o in meta.get("ownerReferences") or [] if o.get("kind") == "InferenceService"), None)
    if owner is None:
        return None
    return {"apiVersion": owner.get("apiVersion", "ome.io/v1beta1"), "kind": "InferenceService",
            "metadata": {"name": owner["name"], "namespace": meta.get("namespace"), "uid": owner.get("uid")}}
