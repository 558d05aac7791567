"""The InferenceService reconciler: read the cache, call the pure resolution, converge, report.

Steps, each a short method: TTL first (so no spec problem keeps an expired service alive), then
VirtualDeployment, model, runtime, components in order (engine, decoder, router), the external Service
(external_access.py), cleanup of removed components, status (written beside the children's writes once
the service runs: every workload cached and a status reported; taken back should a write fail). Reads come
only from the shared cache; writes are server-side applies that happen only when a desired object changed
or a field OME sets drifted out of band (children.py, converge.py), so a no-op reconcile writes nothing.
The config is read once per reconcile.

It is the one writer of the InferenceService status (status_writes.py, which also holds our last write of
each service until the cache shows it).

A service with spec.replicaRefs takes its own path (no model, runtime or workload): Services in front of
the standalone replicas it names, and the replicas mirrored into status (replica_fronts.py).

An engine or decoder whose runtime lists AcceleratorClasses gets the class the service names or its
policy picks (resolution/accelerators.py). A named class that does not exist records an
`AcceleratorClassError` Warning event and fails the reconcile (retried with backoff) before anything is
rendered, so the running workloads stay as they are.

A runtime that cannot be resolved leaves the running workloads as they are: RuntimeReady goes False and a
`RuntimeNotFound` Warning event is recorded (unrendered.py: what a pass that renders nothing reports).

A service that pins its runtime (spec.runtime.autoSync false, or spec.runtime.revision) renders from a
runtime revision, a ControllerRevision in the config namespace (runtime_pinning.py; the decision is
resolution/runtime_revisions.py): the first pin and each roll forward create the revision, status carries
pinnedRevisionName, lastRuntimeSyncToken and RuntimeDrifted, and a drift that pauses updates
(RevisionMismatch, RevisionMissing, RuntimeMismatch) leaves the workloads as they are. A pinned service
whose runtime is gone keeps serving from its revision (SourceRuntimeMissing); one that cannot pin at all
records a `RuntimePinError` Warning event and is retried.

Components are converged in order (component_writes.py); one in a mode it cannot run in stops the
components after it and fails the reconcile, so the key is retried with backoff.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Protocol

import structlog

from ome.api import resources
from ome.config.config_source import ConfigSource
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers.autoscaler import entries as scaler_entries
from ome.controllers.inferenceservice import (
    children,
    component_writes,
    converge,
    external_access,
    replica_fronts,
    routing,
    runtime_pinning,
    status,
    status_writes,
    ttl,
    unrendered,
)
from ome.controllers.rolloutcoordination import condition as coordination_condition
from ome.framework import errors
from ome.framework.events import EventRecorder
from ome.framework.own_applies import OwnApplies, SeenVersion
from ome.framework.post_creates import PostCreates
from ome.framework.reconcile import Request, Result, RetryError
from ome.framework.timefmt import format_time
from ome.framework.write_behind import WriteBehind
from ome.resolution import (
    accelerators,
    component_podmonitor,
    components,
    fine_tuned,
    models,
    modes,
    overlays,
    replica_refs,
    runtime_inheritance,
    runtimes,
    workload_metadata,
)
from ome.resolution import runtime_revisions as rr
from ome.resolution.components import ComponentPlan, ModelSource

Obj = dict[str, Any]

log = structlog.get_logger("ome.controllers.inferenceservice")

DEPLOYMENT_MODE_ERROR: Final = "DeploymentModeError"
ENGINE_REQUIRED: Final = "engine component is required"
FINE_TUNED_WEIGHT_ERROR: Final = "FineTunedWeightError"
ACCELERATOR_CLASS_ERROR: Final = accelerators.EVENT_REASON


@dataclass(frozen=True, slots=True)
class _Report:
    """What a pass resolved before its writes, for the status it reports after (or beside) them."""

    plans: Sequence[ComponentPlan]
    model: models.ResolvedModel | None
    runtime_name: str
    live_problem: str
    overlays: overlays.OverlayResult
    pin: rr.Decision


class Writer(converge.Writer, runtime_pinning.Creator, Protocol):
    pass


_CONFIG_SNAPSHOT: ContextVar[InferenceServiceConfig | None] = ContextVar("isvc_config", default=None)
"""The config of the reconcile running in this task: concurrent reconciles (one per worker task) each
read their own, so a ConfigMap edit never splits one reconcile between two configs."""


def _utcnow() -> datetime:
    return datetime.now(UTC)


class InferenceServiceReconciler:
    def __init__(
        self,
        *,
        reader: children.Reader,
        writer: Writer,
        recorder: EventRecorder,
        config: InferenceServiceConfig,
        lws_served: bool = False,
        clock: Callable[[], datetime] = _utcnow,
        config_namespace: str = "ome",
        config_source: ConfigSource | None = None,
        routing_facts: routing.RoutingFacts | None = None,
        pod_monitor_served: bool = False,
        autoscaler_entries: scaler_entries.AutoscalerEntries | None = None,
        seen: SeenVersion | None = None,
        write_behind: WriteBehind | None = None,
        replica_teardown: bool = False,
        posts: PostCreates | None = None,
    ) -> None:
        self._behind = write_behind
        # Children are created by POST and their fields moved to the apply entry before a first apply.
        self._posts = posts
        # The InferenceReplica controller runs beside this one: its teardown finalizer goes on at create.
        self._replica_teardown = replica_teardown
        # `seen` (SharedCache.seen_version): how far the children's informers have got, so that a pass
        # right after another does not apply again a child the cache does not show yet (own_applies.py).
        applies = OwnApplies(seen)
        self._config_source = config_source
        self.autoscaler_entries = (autoscaler_entries if autoscaler_entries is not None
                                   else scaler_entries.AutoscalerEntries())
        self.routing = routing.Routing(reader, recorder, routing_facts or routing.RoutingFacts(),
                                       applies=applies)
        self._reader = reader
        # Every write goes through this writer, passed along with each (tests may wrap it to count writes).
        self._writer = writer
        self._statuses = status_writes.StatusWrites(reader, self.autoscaler_entries)
        self._recorder = recorder
        self._startup_config = config
        self._clock = clock
        self.revisions = runtime_pinning.Revisions(reader, config_namespace)
        self.children = (children.CHILD_RESOURCES + ((resources.LEADER_WORKER_SETS,) if lws_served else ())
                         + ((component_podmonitor.POD_MONITORS,) if pod_monitor_served else ()))
        self._owned = children.Children(reader, kinds=self.children, applies=applies, behind=self._behind,
                                        posts=self._posts)
        self._external = external_access.ExternalAccess(reader, self._owned, self.routing)
        self._fronts = replica_fronts.ReplicaFronts(reader, recorder, self._owned, self._external)
        self._components = component_writes.ComponentWrites(
            self._owned, lws_served=lws_served, pod_monitor_served=pod_monitor_served,
            replica_teardown=self._replica_teardown,
        )

    @property
    def _config(self) -> InferenceServiceConfig:
        """One config snapshot per reconcile: read once when the reconcile starts (see reconcile)."""
        return _CONFIG_SNAPSHOT.get() or self._startup_config

    async def reconcile(self, req: Request) -> Result:
        # A ConfigMap edit applies from the next reconcile on; this one renders and reports with one.
        config = await self._config_source.current() if self._config_source is not None else None
        token = _CONFIG_SNAPSHOT.set(config or self._startup_config)
        owner = children.PASS_OWNER.set(req)
        try:
            return await self._reconcile(req)
        finally:
            children.PASS_OWNER.reset(owner)
            _CONFIG_SNAPSHOT.reset(token)

    async def _reconcile(self, req: Request) -> Result:
        isvc = self._reader.get_or_none(resources.INFERENCE_SERVICES, req.name, req.namespace)
        if isvc is None or (isvc.get("metadata") or {}).get("deletionTimestamp"):
            return Result()
        now = self._clock()
        deadline = ttl.check(isvc, now)
        if deadline is not None and deadline.expired:
            await self._expire(isvc, deadline.ttl)
            return Result()
        requeue = Result(requeue_after=deadline.remaining) if deadline is not None else Result()
        if modes.is_virtual(isvc):
            await self._write_status(isvc, status.virtual_status(isvc, self._config, format_time(now)))
            return requeue
        held = await self._reconcile_service(isvc, now)
        if held is not None:  # the first status is held back: written when due at the latest
            return Result(requeue_after=min(held, requeue.requeue_after or held))
        return requeue

    async def _reconcile_service(self, isvc: Obj, now: datetime) -> float | None:
        """Returns the seconds the first status is held back for (status.first_write_deferral)."""
        if replica_refs.is_referencing(isvc):
            await self._reconcile_referenced(isvc, now)
            return None
        try:
            model = models.resolve_model(self._reader, isvc)
        except models.ModelNotFound as exc:
            # A kind that differs from the model's (or a model deleted later): as v1.3, a log line and no
            # event or condition; the workloads stay, and the model's watch requeues the service.
            kind = (models.model_ref(isvc) or {}).get("kind") or models.DEFAULT_KIND
            log.error(f"Failed to get referenced {kind}", error=exc.message)
            raise RetryError(exc.message) from exc
        if model is not None and (problem := unrendered.model_problem(model)) is not None:
            type_, reason, message = problem
            self._recorder.event(isvc, type_, reason, message)
            raise RetryError(message)
        live_problem = ""
        runtime: runtimes.ResolvedRuntime | None
        try:
            runtime = runtimes.resolve_runtime(self._reader, isvc, model)
        except runtimes.NoSupportingRuntime as exc:
            # The condition carries the selector's own reason; the event the full sentence.
            await self._runtime_unresolved(
                isvc, exc.message, condition=exc.detail, has_model=model is not None, now=now
            )
            return None
        except (runtimes.RuntimeNotFound, runtimes.RuntimeDisabled) as exc:
            if not rr.pins(isvc):
                await self._runtime_unresolved(isvc, exc.message, has_model=model is not None, now=now)
                return None
            runtime, live_problem = None, exc.message  # a pinned service may serve from its revision
        except runtime_inheritance.InheritanceError as exc:
            # runtime-inheritance.md: the workload stays, a warning event names the chain's error, and
            # the service retries (creating the missing parent changes no runtime this service names).
            reason = unrendered.inheritance_event_reason(isvc, has_model=model is not None)
            await self._runtime_unresolved(
                isvc, exc.message, has_model=model is not None, now=now, event=(reason, exc.message)
            )
            raise RetryError(exc.message) from exc
        except models.ResolutionError as exc:  # not found, disabled, model without a format
            await self._runtime_unresolved(isvc, exc.message, has_model=model is not None, now=now)
            return None
        if (isvc.get("spec") or {}).get("engine") is None:
            # As v1.3's deployment-mode step: no engine, no workload at all (a decoder or router alone is
            # not served); the webhook admits such a service, so this event is where the user learns why.
            log.error("Failed to determine deployment modes", error=ENGINE_REQUIRED)
            self._recorder.event(isvc, "Warning", DEPLOYMENT_MODE_ERROR, ENGINE_REQUIRED)
            raise RetryError(ENGINE_REQUIRED)
        pin = rr.decide(
            isvc,
            runtime.obj if runtime is not None else None,
            self.revisions.list(),
            config_namespace=self.revisions.namespace,
            live_problem=live_problem,
        )
        if pin.pin_error is not None:
            await self._runtime_unresolved(
                isvc, live_problem, has_model=model is not None, now=now, event=(rr.PIN_ERROR, pin.pin_error)
            )
            raise runtime_pinning.PinError(pin.pin_error)
        runtime_name = runtime.name if runtime is not None else str(isvc["spec"]["runtime"]["name"])
        if pin.paused:
            has_model = model is not None
            await self._paused(isvc, pin, runtime_name, has_model=has_model, problem=live_problem, now=now)
            return None
        if pin.create is not None:
            await self.revisions.create(self._writer, pin.create)
        runtime_obj = {"spec": pin.spec} if pin.pinning or runtime is None else runtime.obj
        source = ModelSource.from_object(model.kind, model.obj) if model is not None else None
        found = overlays.resolve(self._reader, isvc) if model is not None else overlays.OverlayResult((), ())
        try:
            tuned = self._fine_tuned(isvc, model)
            chosen = self._accelerators(isvc, runtime_obj)
            plans = components.build_plans(
                isvc, runtime_obj, source, self._config, overlays=found.mounted, runtime_name=runtime_name,
                fine_tuned=tuned, accelerators=chosen,
                model_facts=None if model is None else workload_metadata.ModelFacts.from_object(model.obj),
            )
        except fine_tuned.FineTunedError as exc:
            # Nothing is rendered, so the running workload stays as it is until the input is fixed.
            self._recorder.event(isvc, "Warning", FINE_TUNED_WEIGHT_ERROR, exc.message)
            raise RetryError(exc.message) from exc
        except accelerators.AcceleratorClassError as exc:
            # A named class is missing: the workload stays as it is; the class's watch brings it back.
            self._recorder.event(isvc, "Warning", ACCELERATOR_CLASS_ERROR, exc.message)
            raise RetryError(exc.message) from exc
        # The external Service depends on the plans only: it is applied while the components are.
        writes = asyncio.gather(
            self._components.reconcile(self._writer, isvc, plans, runtime_obj.get("spec") or {},
                                       self._config),
            self._external.reconcile_service(self._writer, isvc, plans, self._config),
        )
        report = _Report(plans=plans, model=model, runtime_name=runtime_name, live_problem=live_problem,
                         overlays=found, pin=pin)
        if not self._status_beside_writes(isvc, plans):
            (done, failure), port = await writes
            return await self._report(isvc, now, report, done, failure, port)
        # A running service's children all exist: its status is what the writes leave it, so it is written
        # while they are made (one round trip per pass, not two). Should a component fail, the status is
        # reported again from what was done, as a pass that waited would have reported it.
        running = asyncio.ensure_future(writes)
        try:
            held = await self._report(isvc, now, report, plans, None,
                                      external_access.service_port(isvc, plans, self._config))
        except asyncio.CancelledError:
            running.cancel()  # the worker is stopping: so are its writes
            raise
        except Exception:
            await asyncio.gather(running, return_exceptions=True)  # never left running past the pass
            raise
        try:
            (done, failure), _ = await running
        except Exception:
            await self._retract(isvc)
            raise
        if failure is None:
            return held
        return await self._report(isvc, now, report, done, failure, None)

    async def _retract(self, isvc: Obj) -> None:
        """A write beside the status failed: the status this pass read goes back, so that it does not
        report a generation whose objects were not written (a waiting pass would not have written it)."""
        old = {k: v for k, v in (isvc.get("status") or {}).items() if k in status.OWNED_FIELDS}
        try:
            await self._write_status(isvc, old)
        except errors.ApiError as exc:
            log.warning("Failed to restore the status after a failed write", error=str(exc))

    def _status_beside_writes(self, isvc: Obj, plans: Sequence[ComponentPlan]) -> bool:
        """Whether the status can be written beside the children's writes: the service has reported a status
        before (no first-write hold), every component's workload is cached (no create of one, which the
        status must not report Ready ahead of) and none of its creates is still running beside a pass."""
        old = isvc.get("status") or {}
        if old.get("observedGeneration") is None or self._owned.creates_pending(isvc):
            return False
        return all(w is not None for w in self._owned.workloads(isvc, plans).values())

    async def _report(
        self, isvc: Obj, now: datetime, report: _Report, done: Sequence[ComponentPlan],
        failure: Exception | None, port: int | None,
    ) -> float | None:
        """Ingress, the cleanup of removed components, then the status from what the writes did."""
        model, pin = report.model, report.pin
        ingress_state, traffic = await self._external.reconcile_ingress(
            self._writer, isvc, done, self._config, format_time(now)
        )
        await self._owned.delete_removed(self._writer, isvc, {plan.component for plan in report.plans})
        observed = status.Observed(
            plans=list(done),
            workloads=self._owned.workloads(isvc, done),
            engine_pods=self._owned.pods(isvc, "engine") if model is not None else (),
            runtime_name=report.runtime_name,
            runtime_error=report.live_problem or None,
            has_model=model is not None,
            external_port=port,
            has_overlays=report.overlays.requested,
            overlays_problem="; ".join(report.overlays.problems) or None,
            ingress=ingress_state,
            traffic=traffic,
            **coordination_condition.with_condition(
                runtime_pinning.observed_fields(pin), self._reader, isvc, now
            ),
        )
        computed = status.compute(isvc, observed, self._config, format_time(now))
        if failure is None and self._owned.creates_pending(isvc) and status.is_ready(computed):
            return None  # not Ready before its objects exist: their events (or the wake) bring a pass
        held = None if failure is not None else status.first_write_deferral(isvc, observed, computed, now)
        if held is not None and scaler_entries.reports_problem(self._statuses.published(isvc)):
            held = None  # an autoscaler that cannot be resolved is reported at once
        if held is None or self._statuses.written_before(isvc):
            await self._write_status(isvc, computed)
            held = None
        if failure is not None:
            raise failure
        return held

    async def _reconcile_referenced(self, isvc: Obj, now: datetime) -> None:
        """Front the replicas spec.replicaRefs names (replica_fronts.py), then report them."""
        observed = await self._fronts.reconcile(self._writer, isvc, self._config)
        await self._write_status(isvc, status.compute(isvc, observed, self._config, format_time(now)))

    # -- steps -------------------------------------------------------------------------------------

    async def _expire(self, isvc: Obj, seconds: int) -> None:
        meta = isvc["metadata"]
        try:
            await self._writer.delete(
                resources.INFERENCE_SERVICES, meta["name"], meta["namespace"], uid=meta["uid"]
            )
        except (errors.NotFound, errors.Conflict):
            return  # already gone, or a newer object with the same name: never delete that one
        log.info("Deleted InferenceService after its TTL", ttl_seconds=seconds)
        self._recorder.event(isvc, "Normal", ttl.EVENT_REASON, ttl.message(seconds))

    async def _runtime_unresolved(
        self,
        isvc: Obj,
        message: str,
        *,
        has_model: bool,
        now: datetime,
        condition: str | None = None,
        event: tuple[str, str] | None = None,
    ) -> None:
        log.warning("Runtime not resolved; leaving the workloads as they are", error=message)
        reason, text = event or (unrendered.RUNTIME_NOT_FOUND, message)
        self._recorder.event(isvc, "Warning", reason, text)
        await self._write_status(isvc, unrendered.unresolved_status(
            isvc, condition or message, has_model=has_model, config=self._config, now=format_time(now)
        ))

    async def _paused(
        self, isvc: Obj, pin: rr.Decision, runtime_name: str, *, has_model: bool, problem: str, now: datetime
    ) -> None:
        """The runtime drifted in a way that pauses updates: report it, touch no workload."""
        log.info("Runtime drifted; leaving the workloads as they are", reason=pin.drift and pin.drift.reason)
        await self._write_status(isvc, unrendered.paused_status(
            isvc, pin, runtime_name, has_model=has_model, problem=problem, config=self._config,
            now=format_time(now),
        ))

    # -- status ------------------------------------------------------------------------------------

    @property
    def status_writes_held(self) -> int:
        """Services whose last status write (by this process) the cache does not show yet."""
        return self._statuses.held

    def forget_shown_status(self, event_type: str, isvc: Obj, old: Obj | None) -> None:
        """Informer handler: drop our last status write of a service once the cache shows it (or the
        service is gone). The service's own status events start no pass, so without this an idle service
        would keep its whole written status here for good: ~5 KiB each, 4.9 MiB at N=1000."""
        self._statuses.forget_shown(event_type, isvc)

    async def _write_status(self, isvc: Obj, computed: Obj) -> None:
        await self._statuses.write(self._writer, isvc, computed)

    # -- cache reads -------------------------------------------------------------------------------

    def _fine_tuned(self, isvc: Obj, model: models.ResolvedModel | None) -> fine_tuned.FineTuned | None:
        wanted = fine_tuned.names(isvc)
        if not wanted or model is None:
            return None
        ftw = self._reader.get_or_none(resources.FINE_TUNED_WEIGHTS, wanted[0])
        return fine_tuned.resolve(isvc, ftw, model.obj)

    def _accelerators(self, isvc: Obj, runtime_obj: Mapping[str, Any]) -> dict[str, Obj]:
        """The AcceleratorClass of the engine and decoder, read from the cache (runtime lists none: none)."""
        runtime_spec = runtime_obj.get("spec") or {}
        classes = {
            name: found
            for name in accelerators.wanted_names(isvc, runtime_spec)
            if (found := self._reader.get_or_none(resources.ACCELERATOR_CLASSES, name)) is not None
        }
        return accelerators.select_all(isvc, runtime_spec, classes)
