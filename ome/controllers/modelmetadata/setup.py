"""Wiring of the `pvc://` model metadata controller: models, their claims, metadata Jobs and results.

Jobs are cached only when they carry `models.ome/model-name`, result ConfigMaps only in OME's namespace
with `models.ome/pvc-status`, claims cut down to identity and phase. A Job wakes its model from its
labels (a ClusterBaseModel's Job lives in another namespace than its cluster-scoped owner), a result
through an index of the models by their result ConfigMap's name, a claim through an index by claim.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

from ome.api.resources import BASE_MODELS, CLUSTER_BASE_MODELS, CONFIGMAPS, JOBS, PVCS
from ome.config.ome_agent import OmeAgentConfig
from ome.controllers.modelmetadata import job as jobs
from ome.controllers.modelmetadata import plan as planner
from ome.controllers.modelmetadata.reconciler import ModelMetadataReconciler
from ome.framework.cache import SharedCache
from ome.framework.controller import Controller
from ome.framework.manager import Manager
from ome.framework.reconcile import Request
from ome.models import storage

Obj = dict[str, Any]
NAME: Final = "modelmetadata"
RESULT_INDEX: Final = "models.ome/pvc-metadata-configmap"
CLAIM_INDEX: Final = "models.ome/pvc-claim"
MODEL_RESOURCES: Final = (BASE_MODELS, CLUSTER_BASE_MODELS)


def index_result(model: Obj) -> list[str]:
    meta = model["metadata"]
    return [jobs.result_configmap_name(meta["name"], meta.get("namespace"))] if storage.is_pvc(model) else []


def index_claim(model: Obj) -> list[str]:
    if not storage.is_pvc(model):
        return []
    claim = planner.claim_of(model)
    return [] if isinstance(claim, str) else [f"{claim.namespace}/{claim.name}"]


def slim_claim(obj: Obj) -> Obj:
    """A PVC as this controller reads it: identity and phase."""
    meta = obj.get("metadata") or {}
    return {"metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion") if k in meta},
            "status": {"phase": (obj.get("status") or {}).get("phase")}}


def job_owner(job: Obj) -> Iterable[Request]:
    labels = job["metadata"].get("labels") or {}
    name = labels.get(jobs.MODEL_NAME_LABEL)
    if not name:
        return []
    owners = [o["name"] for o in job["metadata"].get("ownerReferences") or []
              if o.get("kind") in ("BaseModel", "ClusterBaseModel")] or [name]
    cluster = labels.get(jobs.MODEL_SCOPE_LABEL) == jobs.SCOPE_CLUSTER
    return [Request("" if cluster else job["metadata"]["namespace"], owner) for owner in owners]


def _models_by(cache: SharedCache, index: str, value: str) -> list[Request]:
    return [Request(m["metadata"].get("namespace") or "", m["metadata"]["name"])
            for res in MODEL_RESOURCES for m in cache.list(res, index=(index, value))]


def _only_changes(fields: Callable[[Obj], Any]) -> Callable[[str, Obj, Obj | None], bool]:
    def predicate(event_type: str, obj: Obj, old: Obj | None) -> bool:
        return old is None or event_type == "DELETED" or fields(obj) != fields(old)

    return predicate


def add_to_manager(manager: Manager, agent: OmeAgentConfig, *, config_namespace: str = "ome") -> Controller:
    cache = manager.cache
    controller = Controller(NAME, ModelMetadataReconciler(cache, manager.client, agent,
                                                          ome_namespace=config_namespace))
    for res in MODEL_RESOURCES:
        informer = cache.informer_for(res)
        informer.add_indexer(RESULT_INDEX, index_result)
        informer.add_indexer(CLAIM_INDEX, index_claim)
        controller.for_(informer)
    metadata_jobs = cache.informer_for(JOBS, label_selector=jobs.MODEL_NAME_LABEL)
    controller.watches(metadata_jobs, job_owner, _only_changes(lambda j: j.get("status")))
    results = cache.informer_for(CONFIGMAPS, namespace=config_namespace,
                                 label_selector={jobs.PVC_STATUS_LABEL: "true"})
    controller.watches(results, lambda cm: _models_by(cache, RESULT_INDEX, cm["metadata"]["name"]),
                       _only_changes(lambda c: (c.get("data"), c["metadata"].get("annotations"))))
    claims = cache.informer_for(PVCS, transform=slim_claim)
    controller.watches(claims, lambda pvc: _models_by(
        cache, CLAIM_INDEX, f"{pvc['metadata'].get('namespace')}/{pvc['metadata']['name']}"),
        _only_changes(lambda p: p["status"]))
    manager.add_controller(controller)
    return controller


__all__ = ["NAME", "add_to_manager", "slim_claim"]
