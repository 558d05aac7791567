"""InferenceReplica reconciler: I/O only. Reads the cache, asks `ome.omenative` what to do, writes it.

Every write is conditional on the cache disagreeing with the plan, so a reconcile of a settled replica
makes no API call. Pod creations and deletions are covered by expectations (`pod_writes`); while they
are pending the key is requeued after the expectations timeout, when they count as satisfied anyway.
A pass's writes go through the modules beside this one: `revision_history` (ControllerRevisions),
`pod_writes` and `pod_groups` (pods, serving gates, PodGroups), `serving_children` (Services and the
PodMonitor), `status_write` (the status and the events after it) and `finalizer`.

At the default log level a replica that waits leaves a trace: a requeue after a conflict is logged
with its key, and an Instance operation (or the replica's expectations) that has waited for a while is
logged with what it waits on and since when (`wait_report`).

A live replica carries the finalizer `ome.io/ir-teardown`; a deleted one is planned down to zero
Instances (drain, then delete) and lets go of the finalizer once no owned pod is left on a live read,
or at the teardown deadline (see `ome.omenative.teardown`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import structlog

from ome.api.resources import INFERENCE_REPLICAS, PODS
from ome.controllers import quota_view
from ome.controllers.inferencereplica import create_holds, status_defer, status_write
from ome.controllers.inferencereplica.create_holds import CreateHolds
from ome.controllers.inferencereplica.finalizer import Finalizer
from ome.controllers.inferencereplica.owned import owned_children
from ome.controllers.inferencereplica.pod_groups import PodGroups
from ome.controllers.inferencereplica.pod_writes import PodWrites
from ome.controllers.inferencereplica.revision_history import RevisionHistory
from ome.controllers.inferencereplica.serving_children import ServingChildren
from ome.controllers.inferencereplica.status_write import StatusWriter
from ome.controllers.inferencereplica.wait_report import WaitReport
from ome.controllers.rolloutcanary import hold as held
from ome.framework import errors, together
from ome.framework.cache import SharedCache
from ome.framework.client import Client
from ome.framework.events import EventRecorder
from ome.framework.expectations import EXPECTATIONS_TIMEOUT, ControllerExpectations
from ome.framework.reconcile import Request, Result
from ome.framework.write_behind import WriteBehind
from ome.framework.written import CACHE_LAG_REQUEUE, WrittenVersions
from ome.omenative import instance_names as names
from ome.omenative import (
    instances,
    operation_holds,
    pod_batching,
    revisions,
    scale_down_metrics,
    status,
    status_metrics,
    teardown,
    waits,
)
from ome.omenative.gang_timeout import schedule_timeout_seconds
from ome.omenative.pods_view import PodView, view
from ome.omenative.replica_spec import desired_replicas, instance_ready_timeout, min_ready_seconds
from ome.omenative.revisions import RevisionData
from ome.omenative.settings import InferenceReplicaSettings

Obj = dict[str, Any]
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
        self._written: WrittenVersions = getattr(client, "written", None) or WrittenVersions()
        self._written.track(INFERENCE_REPLICAS)
        self._cache = cache
        self._settings = settings
        self.expectations = expectations or ControllerExpectations(ttl=expectations_timeout)
        self._expectations_timeout = expectations_timeout
        self._recorder = recorder
        self._now = now or (lambda: datetime.now(UTC).replace(microsecond=0))
        self._waits = WaitReport(wait_log or waits.WaitLog(), self._now)
        self._scale_down = scale_down_metrics.ScaleDownSeries()
        self._holds = CreateHolds()
        """What held this pass's pod creates, per Instance (`operation.waiting`)."""
        self._finalizer = Finalizer(client, self.expectations)
        self._history = RevisionHistory(client, cache, settings)
        self._pod_groups = PodGroups(client)
        self._pods = PodWrites(client, cache, settings, self.expectations, self._holds, self._pod_groups,
                               self._now)
        self._children = ServingChildren(client, cache, settings, write_behind)
        self._status = StatusWriter(client, self._written)

    @property
    def writes(self) -> int:
        """API writes made, for tests and benchmarks (a no-op reconcile adds none)."""
        return (self._finalizer.writes + self._history.writes + self._pod_groups.writes + self._pods.writes
                + self._children.writes + self._status.writes)

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
            self._pod_groups.forget(key)
            return Result()
        if self._written.behind(replica):
            # The cache has not shown our last write of this replica (ours or the rollout's): a plan from
            # the older status recreates a pod the rollout just drained. The write's event requeues it;
            # a wait that lasts is logged like any other.
            cached = replica["metadata"].get("resourceVersion")
            self._waits.gate(key, "cache", f"the cache to show this process's last write of the replica "
                                        f"(cached resourceVersion {cached})")
            return Result(requeue_after=CACHE_LAG_REQUEUE)
        if not self.expectations.satisfied(key):
            # The pending pod events requeue this key; should they never come, the expectations expire
            # after their timeout, and this requeue finds them satisfied.
            adds, deletes = self.expectations.pending(key)
            wake = self._waits.gate(key, "expectations", f"{max(adds, 0)} pod creation(s) and "
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
            self._finalizer.ensure(replica), self._history.ensure(replica, data, digest)
        )
        if known is None:
            return Result()  # the collisionCount bump requeues this key
        pods = [v for p in owned_children(self._cache, PODS, replica) if (v := view(p)) is not None]
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
        wake = self._waits.instances(key, ctx, plan, pods)  # before the writes: one may fail
        self._holds.begin(key)
        try:
            # The Services follow the rows' revisions, which no pod write of this pass changes (a hold
            # only marks an operation as waiting): they go out beside the pod writes. The pod writes'
            # failure is the one raised; either one failing leaves the status unwritten.
            await together.all_settled(
                self._pods.apply(replica, ctx, plan, known),
                self._children.ensure_services(replica, data, digest, known, plan.rows),
                self._children.ensure_pod_monitor(replica, data),
            )
        finally:
            holds = self._holds.end(key)
        # A hold on an operation's creates names it before a pod the scheduler cannot place does.
        waiting = {**instances.unschedulable_holds(plan.rows, pods), **holds}
        plan.rows = operation_holds.settle(plan.rows, waiting, ctx.now, ctx.ready_timeout)
        gang_timeout = schedule_timeout_seconds(ctx.ready_timeout, self._settings.gang_schedule_timeout)
        await self._pod_groups.retime(key, replica, ctx.base, ctx.component, gang_timeout)
        await self._history.prune(replica, plan.rows, ctx.update_revision)
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

    # -- teardown -----------------------------------------------------------------------------

    async def _teardown(self, replica: Obj) -> Result:
        """A deleted replica: plan every Instance away (drain, then delete the pods), and remove the
        finalizer once no owned pod is left, or at the teardown deadline."""
        if not teardown.has_finalizer(replica):
            return Result()  # the garbage collector owns the cleanup
        owned = owned_children(self._cache, PODS, replica)
        now = self._now()
        decision = teardown.decide(
            replica,
            pods_left=len(owned),
            groups_left=0,
            deadline=self._settings.teardown_deadline,
            now=now,
        )
        if decision.release and decision.event is None and await self._finalizer.live_pods(replica):
            return Result(requeue_after=1.0)  # the cache lags the apiserver; look again shortly
        if decision.event is not None and self._recorder is not None:
            self._recorder.event(replica, "Warning", *decision.event)
        if decision.release:
            await self._finalizer.remove(replica)
            return Result()
        known = self._history.known(replica)
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
        wake = self._waits.instances(key, ctx, plan, pods)
        await self._pods.apply(replica, ctx, plan, known)
        await self._write_status(replica, ctx, plan, pods, known)
        self._report_scale_down(key, ctx, plan)
        return Result(requeue_after=_earliest(plan.wake_after, decision.requeue_after, wake))

    # -- observe ------------------------------------------------------------------------------

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
            stuck_grace=self._settings.stuck_pod_grace_period,
            unschedulable_grace=self._settings.unschedulable_grace_period,
        )

    def _ready_timeout(self, replica: Mapping[str, Any]) -> float | None:
        return instance_ready_timeout(replica, self._settings.instance_ready_timeout)

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
            gang_scheduling_available=self._pod_groups.served is not False,
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
            await self._status.write(replica, new, self._recorder)
            log.debug("status updated", replicas=new.get("replicas"), ready=new.get("readyReplicas"))
        status_write.announce(self._recorder, replica, plan.events)


def _earliest(*waits: float | None) -> float | None:
    known = [w for w in waits if w is not None]
    return min(known) if known else None
