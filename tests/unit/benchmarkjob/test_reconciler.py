"""The BenchmarkJob reconciler on in-memory objects: Pending while the service isn't Ready, one Job once it
is, nothing more while the Job exists, and the documented reasons for staying Pending."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from ome.api import resources
from ome.api.resources import Resource
from ome.controllers.benchmarkjob.reconciler import NOT_READY_REQUEUE, BenchmarkJobReconciler
from ome.framework import errors
from ome.framework.reconcile import Request, RetryError
from tests.unit.benchmarkjob.test_builder import MODEL, VLLM_POD, bench, isvc

Obj = dict[str, Any]
REQ = Request("llama-demo", "llama-3-2-1b-instruct-bench")


class FakeApi:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], Obj] = {}
        self.writes: list[tuple[str, str]] = []

    def put(self, res: Resource, obj: Obj) -> None:
        self.objects[(res.plural, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])] = obj

    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None:
        return self.objects.get((res.plural, namespace or "", name))

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj:
        found = self.get_or_none(res, name, namespace)
        if found is None:
            raise errors.NotFound(404, "NotFound", f"{res.plural} {name} not found")
        return found

    async def list(self, res: Resource, namespace: str | None = None, *,
                   label_selector: Mapping[str, str] | None = None) -> tuple[list[Obj], str]:
        assert res is resources.PODS and label_selector == {"ome.io/inferenceservice": "llama-3-2-1b-instruct",
                                                            "component": "engine"}
        return [VLLM_POD], "1"

    async def create(self, res: Resource, obj: Obj, namespace: str | None = None) -> Obj:
        self.writes.append(("create", res.plural))
        self.put(res, obj)
        return obj

    async def patch(self, res: Resource, name: str, patch: Obj, namespace: str | None = None, *,
                    subresource: str | None = None) -> Obj:
        self.writes.append(("patch", f"{res.plural}/{subresource}"))
        obj = self.objects[(res.plural, namespace or "", name)]
        status = obj.setdefault("status", {})
        for key, value in patch["status"].items():
            if value is None:
                status.pop(key, None)
            else:
                status[key] = value
        return obj


def setup_api(ready: bool) -> FakeApi:
    api = FakeApi()
    api.put(resources.BENCHMARK_JOBS, bench())
    service = isvc()
    if not ready:
        service["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    api.put(resources.INFERENCE_SERVICES, service)
    api.put(resources.CLUSTER_BASE_MODELS, MODEL)
    api.put(resources.PVCS, {"metadata": {"name": "benchmark-results", "namespace": "llama-demo"}})
    return api


def test_waits_for_ready_then_creates_one_job() -> None:
    api = setup_api(ready=False)
    rec = BenchmarkJobReconciler(api, api, clock=lambda: "T0")
    result = asyncio.run(rec.reconcile(REQ))
    assert result.requeue_after == NOT_READY_REQUEUE  # "OME checks again every minute"
    assert api.writes == [("patch", "benchmarkjobs/status")]
    assert api.objects[("benchmarkjobs", "llama-demo", REQ.name)]["status"]["state"] == "Pending"
    api.objects[("inferenceservices", "llama-demo", "llama-3-2-1b-instruct")]["status"]["conditions"] = [
        {"type": "Ready", "status": "True"}]
    asyncio.run(rec.reconcile(REQ))
    assert api.writes[1:] == [("create", "jobs")]
    job = api.objects[("jobs", "llama-demo", REQ.name)]
    assert job["metadata"]["labels"] == {"benchmark": REQ.name}
    assert job["spec"]["template"]["spec"]["nodeSelector"] == {
        "models.ome.io/clusterbasemodel.llama-3-2-1b-instruct": "Ready"}
    asyncio.run(rec.reconcile(REQ))  # the Job exists: Running, then nothing more
    assert api.writes[2:] == [("patch", "benchmarkjobs/status")]
    assert api.objects[("benchmarkjobs", "llama-demo", REQ.name)]["status"]["state"] == "Running"
    asyncio.run(rec.reconcile(REQ))
    assert len(api.writes) == 3


def test_missing_claim_keeps_it_pending_with_the_documented_message() -> None:
    api = setup_api(ready=True)
    del api.objects[("persistentvolumeclaims", "llama-demo", "benchmark-results")]
    rec = BenchmarkJobReconciler(api, api, clock=lambda: "T0")
    with pytest.raises(RetryError, match="PVC benchmark-results not found"):
        asyncio.run(rec.reconcile(REQ))
    assert ("create", "jobs") not in api.writes


def test_missing_service_is_retried_with_its_message() -> None:
    api = setup_api(ready=True)
    del api.objects[("inferenceservices", "llama-demo", "llama-3-2-1b-instruct")]
    rec = BenchmarkJobReconciler(api, api, clock=lambda: "T0")
    with pytest.raises(RetryError, match="failed to get InferenceService llama-demo/llama-3-2-1b-instruct"):
        asyncio.run(rec.reconcile(REQ))
