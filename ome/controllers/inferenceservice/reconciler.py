"""The InferenceService reconciler: read the cache, call the pure resolution, converge, report.

Steps, each a short method: TTL first (so no spec problem keeps an expired service alive), then
VirtualDeployment, model, runtime, components in order (engine, decoder, router), the external Service,
cleanup of removed components, status (written beside the children's writes once the service runs:
every workload cached and a status reported; taken back should a write fail). Reads come only from the
shared cache; writes are server-side applies that happen only when a desired object changed or a field
OME sets drifted out of band (converge.py), so a no-op reconcile writes nothing. The config is read once
per reconcile.

It is the one writer of the InferenceService status: the autoscaler controller's entries
(`status.components.<c>.autoscaler`) are merged into every status written (autoscaler/entries.py), so a new
service's first status carries them in the same write.

A service with spec.replicaRefs takes its own path (no model, runtime or workload): per referenced role it
reads the standalone InferenceReplica from the cache, keeps the stable Service `{isvc}-{role}` in front of
the replica's pods and mirrors the replica into status. A replica that is missing or not a standalone
replica of the role's component sets the role's ready condition False with `ReplicaRefMissing` or
`ReplicaRefInvalid` and records a Warning event of the same reason; the replica watch (controller.py)
brings the service back when the replica returns. The referenced replica is never written, adopted or
deleted.

An engine or decoder whose runtime lists AcceleratorClasses gets the class the service names or its
policy picks (resolution/accelerators.py). A named class that does not exist records an
`AcceleratorClassError` Warning event and fails the reconcile (retried with backoff) before anything is
rendered, so the running workloads stay as they are.

A runtime that cannot be resolved leaves the running workloads as they are: RuntimeReady goes False and a
`RuntimeNotFound` Warning event is recorded.

A service that pins its runtime (spec.runtime.autoSync false, or spec.runtime.revision) renders from a
runtime revision, a ControllerRevision in the config namespace (runtime_pinning.py; the decision is
resolution/runtime_revisions.py): the first pin and each roll forward create the revision, status carries
pinnedRevisionName, lastRuntimeSyncToken and RuntimeDrifted, and a drift that pauses updates
(RevisionMismatch, RevisionMissing, RuntimeMismatch) leaves the workloads as they are. A pinned service
whose runtime is gone keeps serving from its revision (SourceRuntimeMissing); one that cannot pin at all
records a `RuntimePinError` Warning event and is retried.

A component in a mode it cannot run in (VirtualDeployment, or MultiNode on the router) logs `Failed to
reconcile component` and stops the components after it; the reconcile then fails so the key is retried
with backoff.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal, Protocol

import structlog

from ome.api import resources
from ome.api.resources import Resource
from ome.config.config_source import ConfigSource
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers import shared_conditions
from ome.controllers.autoscaler import entries as scaler_entries
from ome.controllers.autoscaler.decide import initial_replicas
from ome.controllers.inferenceservice import converge, pod_index, routing, runtime_pinning, status, ttl
from ome.controllers.rolloutcoordination import condition as coordination_condition
from ome.framework import errors
from ome.framework.events import EventRecorder
from ome.framework.own_applies import OwnApplies, SeenVersion
from ome.framework.post_creates import PostCreates
from ome.framework.reconcile import Request, Result, RetryError
from ome.framework.store import OWNER_INDEX
from ome.framework.timefmt import format_time
from ome.framework.write_behind import WriteBehind
from ome.omenative import teardown
from ome.resolution import (
    accelerators,
    component_podmonitor,
    components,
    fine_tuned,
    ingress,
    models,
    modes,
    naming,
    objects,
    overlays,
    replica_refs,
    runtime_inheritance,
    runtimes,
    workload_metadata,
    workloads,
)
from ome.resolution import runtime_revisions as rr
from ome.resolution.components import ComponentPlan, ModelSource

Obj = dict[str, Any]
_Written = tuple[str | None, str | None, Obj]
"""A status write: the resourceVersion before and after it, and the status written."""

log = structlog.get_logger("ome.controllers.inferenceservice")

RUNTIME_NOT_FOUND: Final = "RuntimeNotFound"
RUNTIME_VALIDATION_ERROR: Final = "RuntimeValidationError"
RUNTIME_FETCH_ERROR: Final = "RuntimeFetchError"
MODEL_NOT_FOUND: Final = "ModelNotFound"
MODEL_RECONCILE_ERROR: Final = "ModelReconcileError"
DEPLOYMENT_MODE_ERROR: Final = "DeploymentModeError"
ENGINE_REQUIRED: Final = "engine component is required"
MODEL_NOT_READY: Final = "ModelNotReady"
SHARDED_UNSUPPORTED: Final = "no model cache provider is configured for sharded model loading"
FINE_TUNED_WEIGHT_ERROR: Final = "FineTunedWeightError"
ACCELERATOR_CLASS_ERROR: Final = accelerators.EVENT_REASON
CHILD_RESOURCES: Final = (
    resources.DEPLOYMENTS,
    resources.INGRESSES,
    resources.SERVICES,
    # HPAs, ScaledObjects and PDBs belong to the autoscaler controller (ome/controllers/autoscaler).
    resources.INFERENCE_REPLICAS,
    # The router's own identity (resolution/router_rbac.py).
    resources.SERVICE_ACCOUNTS,
    resources.ROLES,
    resources.ROLE_BINDINGS,
)
_IDENTITY_KINDS: Final = frozenset({"ServiceAccount", "Role", "RoleBinding"})
_WORKLOAD_RESOURCES: Final = {
    modes.RAW_DEPLOYMENT: resources.DEPLOYMENTS,
    modes.OMENATIVE: resources.INFERENCE_REPLICAS,
    modes.MULTINODE: resources.LEADER_WORKER_SETS,
}



@dataclass(frozen=True, slots=True)
class _Report:
    """What a pass resolved before its writes, for the status it reports after (or beside) them."""

    plans: Sequence[ComponentPlan]
    model: models.ResolvedModel | None
    runtime_name: str
    live_problem: str
    overlays: overlays.OverlayResult
    pin: rr.Decision


class Reader(runtime_pinning.Lister, Protocol):
    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None: ...


class Writer(converge.Writer, runtime_pinning.Creator, Protocol):
    pass


_CONFIG_SNAPSHOT: ContextVar[InferenceServiceConfig | None] = ContextVar("isvc_config", default=None)
"""The config of the reconcile running in this task: concurrent reconciles (one per worker task) each
read their own, so a ConfigMap edit never splits one reconcile between two configs."""
_PASS_OWNER: ContextVar[Request | None] = ContextVar("isvc_pass_owner", default=None)
"""The service this pass reconciles: requeued should a create it started beside it fail."""


def _inheritance_event_reason(isvc: Obj, *, has_model: bool) -> str:
    """The event of a broken runtime chain, as runtime-inheritance.md names it."""
    if rr.pins(isvc):
        return rr.PIN_ERROR
    return RUNTIME_VALIDATION_ERROR if has_model else RUNTIME_FETCH_ERROR


class ComponentError(RetryError):
    """A component could not be reconciled; later components were skipped."""


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _model_problem(model: models.ResolvedModel) -> tuple[Literal["Normal", "Warning"], str, str] | None:
    """A model OME cannot serve from, as troubleshoot-an-inferenceservice.md lists them: disabled (Warning
    ModelReconcileError), or Sharded (Normal ModelNotReady). Nothing is rendered for either."""
    if model.disabled:
        return "Warning", MODEL_RECONCILE_ERROR, f"specified base model {model.name} is disabled"
    if model.spec.get("distribution") == "Sharded":
        return "Normal", MODEL_NOT_READY, SHARDED_UNSUPPORTED
    return None


class InferenceServiceReconciler:
    def __init__(
        self,
        *,
        reader: Reader,
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
        self._applies = OwnApplies(seen)
        self._config_source = config_source
        self.autoscaler_entries = (autoscaler_entries if autoscaler_entries is not None
                                   else scaler_entries.AutoscalerEntries())
        self._pod_monitor_served = pod_monitor_served
        self.routing = routing.Routing(reader, recorder, routing_facts or routing.RoutingFacts(),
                                       applies=self._applies)
        self._reader = reader
        self._writer = writer
        self._status_written: dict[tuple[str, str], _Written] = {}
        """Per service, our last status write: the resourceVersion before and after it, and the status."""
        self._recorder = recorder
        self._startup_config = config
        self._lws_served = lws_served
        self._clock = clock
        self.revisions = runtime_pinning.Revisions(reader, config_namespace)
        self.children = (CHILD_RESOURCES + ((resources.LEADER_WORKER_SETS,) if lws_served else ())
                         + ((component_podmonitor.POD_MONITORS,) if pod_monitor_served else ()))

    @property
    def _config(self) -> InferenceServiceConfig:
        """One config snapshot per reconcile: read once when the reconcile starts (see reconcile)."""
        return _CONFIG_SNAPSHOT.get() or self._startup_config

    async def reconcile(self, req: Request) -> Result:
        # A ConfigMap edit applies from the next reconcile on; this one renders and reports with one.
        config = await self._config_source.current() if self._config_source is not None else None
        token = _CONFIG_SNAPSHOT.set(config or self._startup_config)
        owner = _PASS_OWNER.set(req)
        try:
            return await self._reconcile(req)
        finally:
            _PASS_OWNER.reset(owner)
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
        if model is not None and (problem := _model_problem(model)) is not None:
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
            reason = _inheritance_event_reason(isvc, has_model=model is not None)
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
            self._reconcile_components(isvc, plans, runtime_obj.get("spec") or {}),
            self._reconcile_external_service(isvc, plans),
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
            held = await self._report(isvc, now, report, plans, None, self._external_port(isvc, plans))
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
        if old.get("observedGeneration") is None or self._creates_on_their_way(isvc):
            return False
        return all(w is not None for w in self._workloads(isvc, plans).values())

    def _external_port(self, isvc: Obj, plans: Sequence[ComponentPlan]) -> int | None:
        """The port `_reconcile_external_service` reports, from the plans alone."""
        return _port(self._external_wanted(isvc, _external_service(isvc, plans)))

    async def _report(
        self, isvc: Obj, now: datetime, report: _Report, done: Sequence[ComponentPlan],
        failure: Exception | None, port: int | None,
    ) -> float | None:
        """Ingress, the cleanup of removed components, then the status from what the writes did."""
        model, pin = report.model, report.pin
        ingress_state, traffic = await self._reconcile_ingress(isvc, done, format_time(now))
        await self._delete_removed(isvc, {plan.component for plan in report.plans})
        observed = status.Observed(
            plans=list(done),
            workloads=self._workloads(isvc, done),
            engine_pods=self._pods(isvc, "engine") if model is not None else (),
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
        if failure is None and self._creates_on_their_way(isvc) and status.is_ready(computed):
            return None  # not Ready before its objects exist: their events (or the wake) bring a pass
        held = None if failure is not None else status.first_write_deferral(isvc, observed, computed, now)
        if held is not None and scaler_entries.reports_problem(self._published(isvc)):
            held = None  # an autoscaler that cannot be resolved is reported at once
        if held is None or self._written_before(isvc):
            await self._write_status(isvc, computed)
            held = None
        if failure is not None:
            raise failure
        return held

    async def _reconcile_referenced(self, isvc: Obj, now: datetime) -> None:
        """Front the standalone replicas spec.replicaRefs names; write nothing on them."""
        namespace = isvc["metadata"]["namespace"]
        refs: list[status.RoleRef] = []
        ports: dict[str, int | None] = {}
        for role, name in replica_refs.roles(isvc):
            replica = self._reader.get_or_none(resources.INFERENCE_REPLICAS, name, namespace)
            problem = replica_refs.problem(isvc, role, name, replica)
            refs.append(status.RoleRef(role, name, replica, problem))
            if problem is None and replica is not None:
                ports[role] = await self._front(isvc, role, name, replica)
            elif problem is not None:  # the role's Service is left as it is; nothing is created for it
                log.warning(
                    "Referenced replica unusable", component=role, replica=name, reason=problem.reason
                )
                self._recorder.event(isvc, "Warning", problem.reason, problem.message)
        target = replica_refs.external_target(replica_refs.roles(isvc))
        if target is None:
            port = await self._converge_external(isvc, None)
        elif (target_port := ports.get(target[0])) is None:
            port = None  # the target serves nothing now: leave the Service `{isvc}` as it is
        else:
            desired = replica_refs.external_service(isvc, target[0], target[1], target_port)
            port = await self._converge_external(isvc, desired)
        await self._delete_removed(isvc, {ref.component for ref in refs})
        observed = status.Observed(plans=(), referenced=True, refs=refs, external_port=port)
        await self._write_status(isvc, status.compute(isvc, observed, self._config, format_time(now)))

    async def _front(self, isvc: Obj, role: str, replica_name: str, replica: Obj) -> int | None:
        """Converge the stable Service of one referenced role; returns its port (None: no Service yet)."""
        namespace = isvc["metadata"]["namespace"]
        revision = None
        if not (replica.get("spec") or {}).get("runners") and (rev := replica_refs.revision_name(replica)):
            revision = self._reader.get_or_none(resources.CONTROLLER_REVISIONS, rev, namespace)
        template = replica_refs.serving_template(replica, revision)
        name = naming.service_name(isvc["metadata"]["name"], role)
        cached = self._reader.get_or_none(resources.SERVICES, name, namespace)
        if template is None:  # the named revision is not in the cache yet: keep the ports as they are
            return replica_refs.service_port(cached) if cached is not None else None
        desired = replica_refs.stable_service(isvc, role, replica_name, template)
        await self._converge(desired, cached)
        return replica_refs.service_port(desired)

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
        reason, text = event or (RUNTIME_NOT_FOUND, message)
        self._recorder.event(isvc, "Warning", reason, text)
        observed = status.Observed(
            plans=None,
            runtime_error=condition or message,
            has_model=has_model,
            **runtime_pinning.observed_fields(rr.carried(isvc)),
        )
        computed = status.compute(isvc, observed, self._config, format_time(now))
        await self._write_status(isvc, _keep_model_status(isvc, computed, has_model))

    async def _paused(
        self, isvc: Obj, pin: rr.Decision, runtime_name: str, *, has_model: bool, problem: str, now: datetime
    ) -> None:
        """The runtime drifted in a way that pauses updates: report it, touch no workload."""
        log.info("Runtime drifted; leaving the workloads as they are", reason=pin.drift and pin.drift.reason)
        observed = status.Observed(
            plans=None,
            runtime_name=runtime_name,
            runtime_error=problem or None,
            has_model=has_model,
            **runtime_pinning.observed_fields(pin),
        )
        computed = status.compute(isvc, observed, self._config, format_time(now))
        old = isvc.get("status") or {}
        for key in ("url", "address", "addresses", "traffic"):  # the workloads still serve where they did
            if key in old:
                computed[key] = old[key]
        await self._write_status(isvc, _keep_model_status(isvc, computed, has_model))

    async def _reconcile_components(
        self, isvc: Obj, plans: Sequence[ComponentPlan], runtime_spec: Mapping[str, Any]
    ) -> tuple[list[ComponentPlan], Exception | None]:
        """Converge components in order; stop at the first that fails and return it as the error."""
        done: list[ComponentPlan] = []
        for plan in plans:
            try:
                desired = workloads.render_component(isvc, plan, self._config, lws_served=self._lws_served)
            except (modes.UnreconcilableModeError, workloads.LeaderWorkerSetUnavailableError) as exc:
                log.error(
                    "Failed to reconcile component", component=plan.component, mode=plan.mode, error=str(exc)
                )
                return done, ComponentError(str(exc))
            if self._pod_monitor_served and plan.mode in component_podmonitor.MODES:
                desired = [*desired, component_podmonitor.render(isvc, plan)]
            # A component's objects are independent and applied together (one round trip, not one
            # each), but the router's identity comes first: its pods cannot be created without it.
            identity = [obj for obj in desired if obj["kind"] in _IDENTITY_KINDS]
            for obj in identity:
                await self._converge(obj, self._cached(obj), inline=True)
            # An OMENative replica is created with the count the autoscaler would set (no /scale after).
            initial = initial_replicas(isvc, plan, runtime_spec, self._config)
            counted = {"spec": {"replicas": initial}} if initial is not None else None
            rest = [(obj, self._cached(obj)) for obj in desired if obj["kind"] not in _IDENTITY_KINDS]
            replica = "InferenceReplica"
            if self._replica_teardown:
                rest = [(teardown.on_create(obj, cached) if obj["kind"] == replica else obj, cached)
                        for obj, cached in rest]
            await asyncio.gather(*(
                self._converge(obj, cached, create_only=counted if obj["kind"] == replica else None)
                for obj, cached in rest))
            done.append(plan)
        return done, None

    async def _reconcile_external_service(self, isvc: Obj, plans: Sequence[ComponentPlan]) -> int | None:
        """The Service `{isvc}` while ingress creation is off; returns its port (None when there is none)."""
        return await self._converge_external(isvc, _external_service(isvc, plans))

    async def _reconcile_ingress(
        self, isvc: Obj, plans: Sequence[ComponentPlan], now: str
    ) -> tuple[status.IngressState | None, Obj | None]:
        """The Ingress or the HTTPRoutes with ingress creation on, and the backend policy (routing.py);
        returns IngressReady's state (None while creation is off) and status.traffic."""
        found = self._workloads(isvc, plans)

        def serving(plan: ComponentPlan) -> bool:
            workload = found.get(plan.component)
            return routing.can_back_route(plan, workload, status.workload_condition(plan, workload).ok)

        exposure = await self.routing.reconcile(isvc, plans, self._config, serving, now, writer=self._writer)
        if exposure.created is None:
            return None, exposure.traffic
        state = status.IngressState(exposure.created, exposure.reason, exposure.message, exposure.url,
                                    exposure.address, exposure.addresses)
        return state, exposure.traffic

    async def _converge_external(self, isvc: Obj, desired: Obj | None) -> int | None:
        """Apply `desired` as the Service `{isvc}`, or delete ours when there is none to have."""
        name, namespace = isvc["metadata"]["name"], isvc["metadata"]["namespace"]
        cached = self._reader.get_or_none(resources.SERVICES, name, namespace)
        wanted = self._external_wanted(isvc, desired)
        if wanted is None:
            if cached is not None and _owned_by(cached, isvc):
                await self._delete(resources.SERVICES, cached)
            return None
        await self._converge(wanted, cached)
        return _port(wanted)

    def _external_wanted(self, isvc: Obj, desired: Obj | None) -> Obj | None:
        """`desired` when the Service `{isvc}` is to exist: not cluster-local, ingress creation off."""
        if desired is None or objects.is_cluster_local(isvc) or ingress.creation_enabled(isvc, self._config):
            return None
        return desired

    async def _delete_removed(self, isvc: Obj, declared: set[str]) -> None:
        """Delete children of components the spec no longer declares (a mode change keeps the old ones)."""
        keep = declared | {naming.EXTERNAL_SERVICE_COMPONENT}
        selector = {naming.ISVC_LABEL: isvc["metadata"]["name"]}
        # Through the owner index: a label scan reads every child of the namespace, on every reconcile.
        owned = (OWNER_INDEX, str(isvc["metadata"].get("uid") or ""))
        for res in self.children:
            for child in self._reader.list(res, isvc["metadata"]["namespace"], label_selector=selector,
                                           index=owned):
                component = (child["metadata"].get("labels") or {}).get(naming.COMPONENT_LABEL)
                if component not in keep and _owned_by(child, isvc):
                    await self._delete(res, child)

    async def _delete(self, res: Resource, obj: Mapping[str, Any]) -> None:
        await converge.delete(self._writer, res, obj, self._applies)

    async def _converge(
        self, desired: Obj, cached: Mapping[str, Any] | None, *,
        create_only: Mapping[str, Mapping[str, Any]] | None = None, inline: bool = False,
    ) -> bool:
        """converge.converge with this reconciler's own applies and the informers' progress; a create
        runs beside the pass (framework/write_behind.py) unless `inline` or no write-behind is set."""
        behind = None if inline else self._behind
        # `reader`: an absent child is read again as the write is decided (a create that ended, or was
        # shown, while this pass ran must be seen).
        return await converge.converge(self._writer, desired, cached, create_only=create_only,
                                       applies=self._applies, behind=behind, owner=_PASS_OWNER.get(),
                                       posts=self._posts, reader=self._reader)

    def _creates_on_their_way(self, isvc: Obj) -> bool:
        """Whether a create of this service's objects runs beside the pass (framework/write_behind.py)."""
        meta = isvc["metadata"]
        return self._behind is not None and self._behind.pending_for(Request(meta["namespace"], meta["name"]))

    @property
    def status_writes_held(self) -> int:
        """Services whose last status write (by this process) the cache does not show yet."""
        return len(self._status_written)

    def forget_shown_status(self, event_type: str, isvc: Obj, old: Obj | None) -> None:
        """Informer handler: drop our last status write of a service once the cache shows it (or the
        service is gone). The service's own status events start no pass, so without this an idle service
        would keep its whole written status here for good: ~5 KiB each, 4.9 MiB at N=1000."""
        meta = isvc["metadata"]
        gone = event_type == "DELETED"
        self._held_write((meta.get("namespace", ""), meta["name"]), None if gone else isvc)

    def _held_write(self, key: tuple[str, str], cached: Obj | None) -> _Written | None:
        """Our last status write of the service while `cached` does not show it; dropped once it does or
        the service is gone (`cached` None)."""
        written = self._status_written.get(key)
        if written is None:
            return None
        if cached is not None and _older(cached["metadata"].get("resourceVersion"), written):
            return written
        del self._status_written[key]
        return None

    def _written_before(self, isvc: Obj) -> bool:
        """Whether this process wrote the service's status and the cache may not show it yet."""
        meta = isvc["metadata"]
        return (meta.get("namespace", ""), meta["name"]) in self._status_written

    async def _write_status(self, isvc: Obj, computed: Obj) -> None:
        meta = isvc["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        # The cache as it is now, not as this pass read it: the informer drops our held write once it
        # shows it (forget_shown_status), so a pass that read the service before that event must compare
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
        computed = scaler_entries.merge(computed, baseline, self._published(isvc))
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
        applied = await self._writer.apply(
            resources.INFERENCE_SERVICES, body, field_manager=converge.FIELD_MANAGER, subresource="status"
        )
        after = ((applied or {}).get("metadata") or {}).get("resourceVersion")
        self._status_written[key] = (current["metadata"].get("resourceVersion"), after, computed)
        # Its watch event may have come first: then there is nothing to hold.
        self._held_write(key, self._reader.get_or_none(resources.INFERENCE_SERVICES, meta["name"],
                                                       meta["namespace"]))
        if scaler_entries.legacy_owner(applied):
            await self._release_legacy_status(meta)

    async def _release_legacy_status(self, meta: Mapping[str, Any]) -> None:
        """An object the autoscaler wrote status entries on under its own manager: this controller owns
        all it wants now (just applied), so an empty apply under that manager drops what only it held."""
        log.info("Releasing the status fields of the autoscaler's former field manager")
        body = {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService",
                "metadata": {"name": meta["name"], "namespace": meta["namespace"]}}
        await self._writer.apply(resources.INFERENCE_SERVICES, body, subresource="status",
                                 field_manager=scaler_entries.LEGACY_FIELD_MANAGER)

    def _published(self, isvc: Obj) -> Mapping[str, Obj] | None:
        meta = isvc["metadata"]
        return self.autoscaler_entries.published(meta.get("namespace", ""), meta["name"])

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

    def _cached(self, obj: Mapping[str, Any]) -> Obj | None:
        meta = obj["metadata"]
        return self._reader.get_or_none(converge.resource_of(obj), meta["name"], meta.get("namespace"))

    def _workloads(self, isvc: Obj, plans: Sequence[ComponentPlan]) -> dict[str, Obj | None]:
        namespace = isvc["metadata"]["namespace"]
        found: dict[str, Obj | None] = {}
        for plan in plans:
            name = naming.lws_name(plan.isvc, plan.component) if plan.mode == modes.MULTINODE else plan.name
            found[plan.component] = self._reader.get_or_none(_WORKLOAD_RESOURCES[plan.mode], name, namespace)
        return found

    def _pods(self, isvc: Obj, component: str) -> list[Obj]:
        meta = isvc["metadata"]
        selector = naming.selector_labels(meta["name"], component)
        service = (pod_index.INDEX, pod_index.key(meta["namespace"], meta["name"]))  # not the namespace's
        return self._reader.list(resources.PODS, meta["namespace"], label_selector=selector, index=service)


def _external_service(isvc: Obj, plans: Sequence[ComponentPlan]) -> Obj | None:
    """The Service `{isvc}` in front of the plans' external target (None: no target)."""
    target = workloads.external_target(plans)
    return objects.external_service(isvc, target) if target is not None else None


def _port(service: Mapping[str, Any] | None) -> int | None:
    return int(service["spec"]["ports"][0]["port"]) if service is not None else None


def _keep_model_status(isvc: Mapping[str, Any], computed: Obj, has_model: bool) -> Obj:
    """Nothing new is known about the model: keep status.modelStatus as it is."""
    computed.pop("modelStatus", None)
    if has_model and (old := (isvc.get("status") or {}).get("modelStatus")) is not None:
        computed["modelStatus"] = old
    return computed


def _owned_by(child: Mapping[str, Any], isvc: Mapping[str, Any]) -> bool:
    uid = isvc["metadata"].get("uid")
    return any(ref.get("uid") == uid for ref in child["metadata"].get("ownerReferences") or [])


def _older(cached: str | None, written: _Written) -> bool:
    """Whether the cached resourceVersion predates our last status write (etcd's are integers; an
    opaque one counts as older only while it is the one the write started from)."""
    before, after, _ = written
    try:
        return int(str(cached)) < int(str(after))
    except ValueError:
        return cached == before
