"""The metadata reconciler's I/O: what it writes for a plan, and nothing when nothing changes."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from ome.api import resources
from ome.config.ome_agent import OmeAgentConfig
from ome.controllers.modelmetadata import job as jobs
from ome.controllers.modelmetadata import setup
from ome.controllers.modelmetadata.reconciler import RECHECK_SECONDS, ModelMetadataReconciler
from ome.framework import errors
from ome.framework.reconcile import Request
from ome.framework.resources import Resource

Obj = dict[str, Any]


class World:
    """A cache and an apiserver in one: writes land in the objects the next read sees."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str | None, str], Obj] = {}
        self.writes: list[tuple[str, str, str]] = []

    def add(self, res: Resource, obj: Obj) -> Obj:
        self.objects[(res.kind, obj["metadata"].get("namespace"), obj["metadata"]["name"])] = obj
        return obj

    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None:
        return self.objects.get((res.kind, namespace, name))

    def list(self, res: Resource, namespace: str | None = None, *,
             label_selector: Mapping[str, str] | str | None = None,
             index: tuple[str, str] | None = None) -> list[Obj]:
        want = dict(label_selector) if isinstance(label_selector, Mapping) else {}
        return [o for (kind, ns, _), o in self.objects.items() if kind == res.kind
                and (namespace is None or ns == namespace)
                and all((o["metadata"].get("labels") or {}).get(k) == v for k, v in want.items())]

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj:
        obj = self.get_or_none(res, name, namespace)
        if obj is None:
            raise errors.NotFound(404, "NotFound", name)
        return obj

    async def create(self, res: Resource, obj: Obj, namespace: str | None = None) -> Obj:
        self.writes.append(("create", res.kind, obj["metadata"]["name"]))
        return self.add(res, copy.deepcopy(obj))

    async def patch(self, res: Resource, name: str, patch: Obj, namespace: str | None = None, *,
                    subresource: str | None = None) -> Obj:
        self.writes.append(("patch", res.kind, subresource or "spec"))
        new = copy.deepcopy(self.objects[(res.kind, namespace, name)])
        for key, value in patch.items():
            if isinstance(value, dict) and isinstance(new.get(key), dict) and key != "status":
                new[key].update(value)
            else:
                new[key] = value
        return self.add(res, new)

    async def delete(self, res: Resource, name: str, namespace: str | None = None, *,
                     propagation_policy: Any = None) -> Obj | None:
        self.writes.append(("delete", res.kind, name))
        if self.objects.pop((res.kind, namespace, name), None) is None:
            raise errors.NotFound(404, "NotFound", name)
        return None


def model() -> Obj:
    return {"apiVersion": "ome.io/v1beta1", "kind": "BaseModel",
            "metadata": {"name": "llama", "namespace": "demo", "uid": "u1", "generation": 1},
            "spec": {"storage": {"storageUri": "pvc://store/models/llama"}}}


def world() -> tuple[World, ModelMetadataReconciler]:
    w = World()
    w.add(resources.BASE_MODELS, model())
    w.add(resources.PVCS, {"metadata": {"name": "store", "namespace": "demo"}, "status": {"phase": "Bound"}})
    return w, ModelMetadataReconciler(w, w, OmeAgentConfig(), ome_namespace="ome",
                                      clock=lambda: "2026-01-01T00:00:00Z")


REQ = Request("demo", "llama")


async def test_first_pass_creates_identity_job_and_in_transit_then_nothing() -> None:
    w, rec = world()
    result = await rec.reconcile(REQ)
    assert w.writes == [("create", "ServiceAccount", "ome-model-metadata"),
                        ("create", "RoleBinding", "ome-model-metadata-demo"),
                        ("create", "Job", jobs.job_name("llama", "pvc://store/models/llama")),
                        ("patch", "BaseModel", "status")]
    assert result.requeue_after == RECHECK_SECONDS
    stored = w.get_or_none(resources.BASE_MODELS, "llama", "demo")
    assert stored is not None and stored["status"]["state"] == "In_Transit"
    w.writes.clear()
    await rec.reconcile(REQ)
    assert w.writes == []  # level-triggered: nothing new, nothing written


async def test_the_result_fills_the_spec_then_the_status() -> None:
    w, rec = world()
    await rec.reconcile(REQ)
    cm_name = jobs.result_configmap_name("llama", "demo")
    entry = {"name": "llama", "status": "Ready", "config": {"modelArchitecture": "LlamaForCausalLM"}}
    w.add(resources.CONFIGMAPS, {"metadata": {"name": cm_name, "namespace": "ome",
                                              "labels": {jobs.PVC_STATUS_LABEL: "true"}},
                                 "data": {jobs.result_key("llama", "demo"): json.dumps(entry)}})
    w.writes.clear()
    await rec.reconcile(REQ)
    assert w.writes == [("patch", "BaseModel", "spec")]
    await rec.reconcile(REQ)
    stored = w.get_or_none(resources.BASE_MODELS, "llama", "demo")
    assert stored is not None and stored["spec"]["modelArchitecture"] == "LlamaForCausalLM"
    assert stored["status"]["state"] == "Ready"
    assert [c["reason"] for c in stored["status"]["conditions"]] == ["PVCValidated", "PVCMetadataReady"]
    w.writes.clear()
    await rec.reconcile(REQ)
    assert w.writes == []


async def test_a_gone_model_leaves_no_job_or_result_behind() -> None:
    w, rec = world()
    await rec.reconcile(REQ)
    cm_name = jobs.result_configmap_name("llama", "demo")
    w.add(resources.CONFIGMAPS, {"metadata": {"name": cm_name, "namespace": "ome"}, "data": {}})
    del w.objects[("BaseModel", "demo", "llama")]
    await rec.reconcile(REQ)
    assert w.list(resources.JOBS) == [] and w.get_or_none(resources.CONFIGMAPS, cm_name, "ome") is None


def test_job_events_wake_the_owner_even_across_namespaces() -> None:
    cluster_job = {"metadata": {"name": "j", "namespace": "demo",
                                "labels": {jobs.MODEL_NAME_LABEL: "llama", jobs.MODEL_SCOPE_LABEL: "cluster"},
                                "ownerReferences": [{"kind": "ClusterBaseModel", "name": "llama"}]}}
    assert list(setup.job_owner(cluster_job)) == [Request("", "llama")]
    own_job = {"metadata": {"name": "j", "namespace": "demo",
                            "labels": {jobs.MODEL_NAME_LABEL: "llama", jobs.MODEL_SCOPE_LABEL: "namespaced"}}}
    assert list(setup.job_owner(own_job)) == [Request("demo", "llama")]
    assert setup.index_claim(model()) == ["demo/store"]
    assert setup.index_result(model()) == [jobs.result_configmap_name("llama", "demo")]
