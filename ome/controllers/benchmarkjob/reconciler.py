"""The BenchmarkJob reconciler: status from the Job, then the Job once its target is there.

Reads the BenchmarkJob, its Job, the InferenceService and the model from the cache; the engine pods, the
output claim and the `benchmarkjob-config` ConfigMap are read live, and only when a Job is about to be
created (rare). The Job is only ever created: editing a BenchmarkJob changes nothing until its Job is
deleted (benchmarks.md). Why a BenchmarkJob stays Pending is logged with the documented messages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

import structlog

from ome.api import resources
from ome.api.resources import Resource
from ome.controllers.benchmarkjob import builder, output_storage, states
from ome.framework import errors, timefmt
from ome.framework.reconcile import Request, Result, RetryError
from ome.models import labels
from ome.resolution import naming

Obj = dict[str, Any]
log = structlog.get_logger("benchmarkjob")
NOT_READY_REQUEUE: Final = 60.0


class Reader(Protocol):
    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None: ...


class Api(Protocol):
    async def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj: ...

    async def list(self, res: Resource, namespace: str | None = None, *,
                   label_selector: Mapping[str, str] | None = None) -> tuple[list[Obj], str]: ...

    async def create(self, res: Resource, obj: Obj, namespace: str | None = None) -> Obj: ...

    async def patch(self, res: Resource, name: str, patch: Obj, namespace: str | None = None, *,
                    subresource: str | None = None) -> Obj: ...


def find_model(reader: Reader, isvc: Mapping[str, Any]) -> tuple[Obj | None, str | None]:
    """The service's model and its node label key: the named kind, else a BaseModel in the service's
    namespace before a ClusterBaseModel (as v1.3 looks it up)."""
    ref = (isvc.get("spec") or {}).get("model") or {}
    name, namespace = ref.get("name"), isvc["metadata"]["namespace"]
    if not name:
        return None, None
    kinds = [ref["kind"]] if ref.get("kind") in ("BaseModel", "ClusterBaseModel") else \
        ["BaseModel", "ClusterBaseModel"]
    for kind in kinds:
        if kind == "BaseModel":
            model = reader.get_or_none(resources.BASE_MODELS, name, namespace)
            if model is not None:
                return model, labels.model_label_key(kind, name, namespace)
        else:
            model = reader.get_or_none(resources.CLUSTER_BASE_MODELS, name)
            if model is not None:
                return model, labels.model_label_key(kind, name)
    return None, None


class BenchmarkJobReconciler:
    def __init__(self, reader: Reader, api: Api, *, config_namespace: str = "ome",
                 clock: Callable[[], str] = timefmt.now) -> None:
        self._reader = reader
        self._api = api
        self._config_namespace = config_namespace
        self._clock = clock

    async def reconcile(self, req: Request) -> Result:
        bench = self._reader.get_or_none(resources.BENCHMARK_JOBS, req.name, req.namespace)
        if bench is None or bench["metadata"].get("deletionTimestamp"):
            return Result()
        job = self._reader.get_or_none(resources.JOBS, req.name, req.namespace)
        patch = states.status_patch(bench.get("status"), job, self._clock())
        if patch is not None:
            await self._api.patch(resources.BENCHMARK_JOBS, req.name, {"status": patch}, req.namespace,
                                  subresource="status")
            if "state" in patch:
                log.info("benchmark state changed", benchmarkjob=str(req), state=patch["state"])
        if job is not None:
            return Result()
        return await self._create_job(req, bench)

    async def _create_job(self, req: Request, bench: Obj) -> Result:
        bound = log.bind(benchmarkjob=str(req))
        endpoint = (bench.get("spec") or {}).get("endpoint") or {}
        try:
            if ref := endpoint.get("inferenceService"):
                isvc = self._reader.get_or_none(resources.INFERENCE_SERVICES, ref.get("name", ""),
                                                ref.get("namespace", ""))
                if isvc is None:
                    raise builder.BuildError(f"failed to get InferenceService {ref.get('namespace')}/"
                                             f"{ref.get('name')}: not found")
                if not builder.is_ready(isvc):
                    bound.info("InferenceService is not ready, re-queuing")
                    return Result(requeue_after=NOT_READY_REQUEUE)
                target = await self._isvc_target(isvc)
            else:
                target = builder.endpoint_target(endpoint.get("endpoint") or {})
            await self._check_claim(bench)
            job = builder.build_job(bench, target, await self._pod_config())
        except builder.BuildError as exc:
            bound.info(str(exc))
            raise RetryError(f"BenchmarkJob {req}: {exc}") from exc
        try:
            await self._api.create(resources.JOBS, job, req.namespace)
        except errors.AlreadyExists:
            return Result()  # its watch event brings the status
        except errors.Invalid as exc:
            # e.g. a podOverride request above its limit: the BenchmarkJob stays Pending (documented).
            bound.info("failed to create the benchmark Job", error=str(exc))
            raise RetryError(f"BenchmarkJob {req}: {exc}") from exc
        bound.info("benchmark Job created", job=job["metadata"]["name"])
        return Result()

    async def _isvc_target(self, isvc: Obj) -> builder.Target:
        model, label = find_model(self._reader, isvc)
        meta = isvc["metadata"]
        pods, _ = await self._api.list(resources.PODS, meta["namespace"], label_selector={
            naming.ISVC_LABEL: meta["name"], naming.COMPONENT_LABEL: "engine"})
        return builder.isvc_target(isvc, model, label, pods)

    async def _check_claim(self, bench: Obj) -> None:
        location = (bench.get("spec") or {}).get("outputLocation") or {}
        try:
            claim = output_storage.claim_of(str(location.get("storageUri") or ""))
        except output_storage.OutputStorageError as exc:
            raise builder.BuildError(f"error parsing PVC storage URI: {exc}") from exc
        if claim is None:
            return
        try:
            await self._api.get(resources.PVCS, claim.claim, bench["metadata"]["namespace"])
        except errors.NotFound as exc:
            raise builder.BuildError(f"PVC {claim.claim} not found") from exc

    async def _pod_config(self) -> builder.PodConfig:
        try:
            cm = await self._api.get(resources.CONFIGMAPS, builder.CONFIGMAP, self._config_namespace)
        except errors.NotFound:
            return builder.PodConfig()
        return builder.pod_config(cm.get("data"))
