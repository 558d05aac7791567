"""The metadata reconciler of `pvc://` models: cached reads in, the plan's writes out (decisions in `plan`).

Reads the model, its claim, its Jobs (by label) and its result ConfigMap from the cache; the
ServiceAccount and RoleBinding are read live, and only when a Job is about to be created. A pass with
nothing to change makes no API call. A spec fill ends the pass: its own watch event brings the next one.
Models of other storage schemes are the node agent reconciler's and are left alone here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

import structlog

from ome.api import resources
from ome.api.resources import Resource
from ome.config.ome_agent import OmeAgentConfig
from ome.controllers.modelmetadata import job as jobs
from ome.controllers.modelmetadata import plan as planner
from ome.framework import errors, timefmt
from ome.framework.reconcile import Request, Result
from ome.models import storage

Obj = dict[str, Any]
log = structlog.get_logger("modelmetadata")
RECHECK_SECONDS: Final = 5.0
"""While the Job runs, a backstop besides the Job and ConfigMap watches (v1.3 re-checks as often)."""


class Reader(Protocol):
    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None: ...

    def list(self, res: Resource, namespace: str | None = None, *,
             label_selector: Mapping[str, str] | str | None = None,
             index: tuple[str, str] | None = None) -> list[Obj]: ...


class Api(Protocol):
    async def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj: ...

    async def create(self, res: Resource, obj: Obj, namespace: str | None = None) -> Obj: ...

    async def patch(self, res: Resource, name: str, patch: Obj, namespace: str | None = None, *,
                    subresource: str | None = None) -> Obj: ...

    async def delete(self, res: Resource, name: str, namespace: str | None = None, *,
                     propagation_policy: Any = None) -> Obj | None: ...


class ModelMetadataReconciler:
    def __init__(self, reader: Reader, api: Api, agent: OmeAgentConfig, *, ome_namespace: str = "ome",
                 clock: Callable[[], str] = timefmt.now) -> None:
        self._reader = reader
        self._api = api
        self._agent = agent
        self._ome_namespace = ome_namespace
        self._clock = clock

    def _jobs_of(self, name: str, namespace: str | None) -> list[Obj]:
        selector = jobs.job_labels(name, cluster_scoped=not namespace)
        return self._reader.list(resources.JOBS, namespace or None, label_selector=selector)

    def _result_of(self, name: str, namespace: str | None) -> Obj | None:
        return self._reader.get_or_none(resources.CONFIGMAPS, jobs.result_configmap_name(name, namespace),
                                        self._ome_namespace)

    async def reconcile(self, req: Request) -> Result:
        res = resources.BASE_MODELS if req.namespace else resources.CLUSTER_BASE_MODELS
        namespace = req.namespace or None
        model = self._reader.get_or_none(res, req.name, namespace)
        found_jobs = self._jobs_of(req.name, namespace)
        result = self._result_of(req.name, namespace)
        if model is None or not storage.is_pvc(model):
            # Gone, or moved to another scheme: what the metadata Job left behind goes.
            await self._apply(res, model, planner.cleanup(found_jobs, result), req)
            return Result()
        claim = planner.claim_of(model)
        pvc = None
        if isinstance(claim, planner.Claim):
            pvc = self._reader.get_or_none(resources.PVCS, claim.name, claim.namespace)
        step = planner.plan(planner.Inputs(model, pvc, found_jobs, result, self._agent, self._ome_namespace))
        if await self._apply(res, model, step, req):
            return Result()
        if step.verdict is not None and step.verdict.reason == planner.PVC_METADATA_EXTRACTING:
            return Result(requeue_after=RECHECK_SECONDS)
        return Result()

    async def _apply(self, res: Resource, model: Obj | None, step: planner.Plan, req: Request) -> bool:
        """Carry out the plan; True when the pass should end here (a spec write brings the next one)."""
        bound = log.bind(kind=res.kind, name=req.name, namespace=req.namespace or None)
        for namespace, name in step.delete_jobs:
            try:
                await self._api.delete(resources.JOBS, name, namespace, propagation_policy="Background")
                bound.info("metadata Job deleted", job=f"{namespace}/{name}")
            except errors.NotFound:
                pass
        if step.delete_result:
            cm_name = jobs.result_configmap_name(req.name, req.namespace or None)
            try:
                await self._api.delete(resources.CONFIGMAPS, cm_name, self._ome_namespace)
                bound.info("metadata result deleted", configmap=cm_name)
            except errors.NotFound:
                pass
        if model is None:
            return True
        if step.ensure_identity is not None:
            await self._ensure(resources.SERVICE_ACCOUNTS, step.ensure_identity[0], bound)
            await self._ensure(resources.ROLE_BINDINGS, step.ensure_identity[1], bound)
        if step.create_job is not None:
            job_meta = step.create_job["metadata"]
            try:
                await self._api.create(resources.JOBS, step.create_job, job_meta["namespace"])
                bound.info("Created metadata extraction Job",
                           job=f"{job_meta['namespace']}/{job_meta['name']}")
            except errors.AlreadyExists:
                pass
        if step.spec_fill:
            meta = model["metadata"]
            await self._api.patch(res, meta["name"], {"spec": step.spec_fill}, meta.get("namespace"))
            bound.info("model spec filled from its metadata Job", fields=sorted(step.spec_fill))
            return True
        if step.verdict is not None:
            await self._write_status(res, model, step.verdict, bound)
        return False

    async def _ensure(self, res: Resource, obj: Obj, bound: Any) -> None:
        meta = obj["metadata"]
        try:
            await self._api.get(res, meta["name"], meta["namespace"])
            return
        except errors.NotFound:
            pass
        try:
            await self._api.create(res, obj, meta["namespace"])
            bound.info("created for the metadata Job", resource=res.kind,
                       object=f"{meta['namespace']}/{meta['name']}")
        except errors.AlreadyExists:
            pass

    async def _write_status(self, res: Resource, model: Obj, verdict: planner.Verdict, bound: Any) -> None:
        desired = planner.desired_status(model, verdict, self._clock())
        if not planner.status_differs(model, desired):
            return
        meta = model["metadata"]
        await self._api.patch(res, meta["name"], {"status": desired}, meta.get("namespace"),
                              subresource="status")
        bound.info("model status updated", state=verdict.state, reason=verdict.reason,
                   message=verdict.message)


__all__ = ["ModelMetadataReconciler", "RECHECK_SECONDS"]
