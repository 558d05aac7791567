"""The InferenceService reconciler: read the cache, call the pure resolution, converge, report.

Steps, each a short method: TTL first (so no spec problem keeps an expired service alive), then
VirtualDeployment, model, runtime, components in order (engine, decoder, router), the external Service,
cleanup of removed components, status. Reads come only from the shared cache; writes are server-side
applies that happen only when a desired object changed (converge.py), so a no-op reconcile writes nothing.

A runtime that cannot be resolved leaves the running workloads as they are: RuntimeReady goes False and a
`RuntimeNotFound` Warning event is recorded. A component in a mode it cannot run in (VirtualDeployment, or
MultiNode on the router) logs `Failed to reconcile component` and stops the components after it; the
reconcile then fails so the key is retried with backoff.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final, Protocol

import structlog

from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers.inferenceservice import converge, status, ttl
from ome.framework import errors, resources
from ome.framework.events import EventRecorder
from ome.framework.reconcile import Request, Result
from ome.framework.resources import Resource
from ome.resolution import components, models, modes, naming, objects, overlays, runtimes, workloads
from ome.resolution.components import ComponentPlan, ModelSource

Obj = dict[str, Any]

log = structlog.get_logger("ome.controllers.inferenceservice")

RUNTIME_NOT_FOUND: Final = "RuntimeNotFound"
MODEL_NOT_FOUND: Final = "ModelNotFound"
CHILD_RESOURCES: Final = (
    resources.DEPLOYMENTS,
    resources.SERVICES,
    resources.HPAS,
    resources.PDBS,
    resources.INFERENCE_REPLICAS,
)
_WORKLOAD_RESOURCES: Final = {
    modes.RAW_DEPLOYMENT: resources.DEPLOYMENTS,
    modes.OMENATIVE: resources.INFERENCE_REPLICAS,
    modes.MULTINODE: resources.LEADER_WORKER_SETS,
}


class Reader(Protocol):
    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None: ...

    def list(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: Mapping[str, str] | None = None,
        index: tuple[str, str] | None = None,
    ) -> list[Obj]: ...


class Writer(converge.Writer, Protocol):
    pass


class ComponentError(Exception):
    """A component could not be reconciled; later components were skipped."""


def _utcnow() -> datetime:
    return datetime.now(UTC)


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
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._recorder = recorder
        self._config = config
        self._lws_served = lws_served
        self._clock = clock
        self.children = CHILD_RESOURCES + ((resources.LEADER_WORKER_SETS,) if lws_served else ())

    async def reconcile(self, req: Request) -> Result:
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
            await self._write_status(isvc, status.virtual_status(isvc, self._config, _rfc3339(now)))
            return requeue
        await self._reconcile_service(isvc, now)
        return requeue

    async def _reconcile_service(self, isvc: Obj, now: datetime) -> None:
        try:
            model = models.resolve_model(self._reader, isvc)
        except models.ModelNotFound as exc:
            # The webhook rejects this at create; a model deleted later lands here. Retried with backoff,
            # and the model's own watch requeues the service when it comes back.
            self._recorder.event(isvc, "Warning", MODEL_NOT_FOUND, exc.message)
            raise
        try:
            runtime = runtimes.resolve_runtime(self._reader, isvc, model)
        except runtimes.NoSupportingRuntime as exc:
            # The condition carries the selector's own reason; the event the full sentence.
            await self._runtime_unresolved(
                isvc, exc.message, condition=exc.detail, has_model=model is not None, now=now
            )
            return
        except models.ResolutionError as exc:  # not found, disabled, model without a format
            await self._runtime_unresolved(isvc, exc.message, has_model=model is not None, now=now)
            return
        source = ModelSource.from_object(model.kind, model.obj) if model is not None else None
        found = overlays.resolve(self._reader, isvc) if model is not None else overlays.OverlayResult((), ())
        plans = components.build_plans(
            isvc, runtime.obj, source, self._config, overlays=found.mounted, runtime_name=runtime.name
        )
        done, failure = await self._reconcile_components(isvc, plans)
        port = await self._reconcile_external_service(isvc, plans)
        await self._delete_removed(isvc, {plan.component for plan in plans})
        observed = status.Observed(
            plans=done,
            workloads=self._workloads(isvc, done),
            engine_pods=self._pods(isvc, "engine") if model is not None else (),
            runtime_name=runtime.name,
            has_model=model is not None,
            external_port=port,
            has_overlays=found.requested,
            overlays_problem="; ".join(found.problems) or None,
        )
        await self._write_status(isvc, status.compute(isvc, observed, self._config, _rfc3339(now)))
        if failure is not None:
            raise failure

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
        self, isvc: Obj, message: str, *, has_model: bool, now: datetime, condition: str | None = None
    ) -> None:
        log.warning("Runtime not resolved; leaving the workloads as they are", error=message)
        self._recorder.event(isvc, "Warning", RUNTIME_NOT_FOUND, message)
        observed = status.Observed(plans=None, runtime_error=condition or message, has_model=has_model)
        computed = status.compute(isvc, observed, self._config, _rfc3339(now))
        computed.pop("modelStatus", None)  # nothing new is known about the model: keep what is there
        if has_model and (old := (isvc.get("status") or {}).get("modelStatus")) is not None:
            computed["modelStatus"] = old
        await self._write_status(isvc, computed)

    async def _reconcile_components(
        self, isvc: Obj, plans: Sequence[ComponentPlan]
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
            for obj in desired:
                await converge.converge(self._writer, obj, self._cached(obj))
            done.append(plan)
        return done, None

    async def _reconcile_external_service(self, isvc: Obj, plans: Sequence[ComponentPlan]) -> int | None:
        """The Service `{isvc}` while ingress creation is off; returns its port (None when there is none)."""
        target = workloads.external_target(plans)
        name, namespace = isvc["metadata"]["name"], isvc["metadata"]["namespace"]
        cached = self._reader.get_or_none(resources.SERVICES, name, namespace)
        if (
            objects.is_cluster_local(isvc)
            or target is None
            or not self._config.ingress.disable_ingress_creation
        ):
            if cached is not None and _owned_by(cached, isvc):
                await self._delete(resources.SERVICES, cached)
            return None
        desired = objects.external_service(isvc, target)
        await converge.converge(self._writer, desired, cached)
        port: int = desired["spec"]["ports"][0]["port"]
        return port

    async def _delete_removed(self, isvc: Obj, declared: set[str]) -> None:
        """Delete children of components the spec no longer declares (a mode change keeps the old ones)."""
        keep = declared | {naming.EXTERNAL_SERVICE_COMPONENT}
        selector = {naming.ISVC_LABEL: isvc["metadata"]["name"]}
        for res in self.children:
            for child in self._reader.list(res, isvc["metadata"]["namespace"], label_selector=selector):
                component = (child["metadata"].get("labels") or {}).get(naming.COMPONENT_LABEL)
                if component not in keep and _owned_by(child, isvc):
                    await self._delete(res, child)

    async def _delete(self, res: Resource, obj: Mapping[str, Any]) -> None:
        meta = obj["metadata"]
        if meta.get("deletionTimestamp"):
            return
        log.info("Deleting child", kind=res.kind, child=meta["name"])
        try:
            await self._writer.delete(res, meta["name"], meta["namespace"], uid=meta.get("uid"))
        except (errors.NotFound, errors.Conflict):
            pass

    async def _write_status(self, isvc: Obj, computed: Obj) -> None:
        if not status.differs(isvc.get("status") or {}, computed):
            return
        meta = isvc["metadata"]
        body = {
            "apiVersion": "ome.io/v1beta1",
            "kind": "InferenceService",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
            "status": computed,
        }
        await self._writer.apply(
            resources.INFERENCE_SERVICES, body, field_manager=converge.FIELD_MANAGER, subresource="status"
        )

    # -- cache reads -------------------------------------------------------------------------------

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
        return self._reader.list(resources.PODS, meta["namespace"], label_selector=selector)


def _owned_by(child: Mapping[str, Any], isvc: Mapping[str, Any]) -> bool:
    uid = isvc["metadata"].get("uid")
    return any(ref.get("uid") == uid for ref in child["metadata"].get("ownerReferences") or [])


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
