"""BenchmarkJob on the real control plane (benchmarks.md, "How a benchmark runs" and "Status").

The InferenceService and its model are served by OME's own controllers (the catalog's ClusterBaseModel is
Ready on gpu-node-0); the BenchmarkJob controller runs next to them in-process. The real Job controller
creates the benchmark pod, the real scheduler places it, and kwok runs it and marks it Succeeded (its
pod-complete stage for Job pods), so the Job completes as it would with a genai-bench that exits 0.
What is checked is what OME writes, and that the status follows the Job: Pending while the service isn't
Ready, Running, Completed with start and completion times; a deleted Job is Pending until OME creates a
new one from the current spec.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any
from urllib.parse import urlsplit

import pytest

from ome.api import resources
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers.benchmarkjob import setup as benchmarkjob
from ome.framework import errors
from ome.framework.client import Client
from ome.models import labels as model_labels
from tests.e2e.isvc_support import (
    NODE,
    catalog,
    create_when_served,
    eventually,
    in_process_manager,
    running_manager,
)

Obj = dict[str, Any]
pytestmark = pytest.mark.usefixtures("ome_crds")
SERVICE = "llama-3-2-1b-instruct"
BENCH = "llama-3-2-1b-instruct-bench"
CLAIM = "benchmark-results"


def benchmark(namespace: str, folder: str) -> Obj:
    return {"apiVersion": "ome.io/v1beta1", "kind": "BenchmarkJob",
            "metadata": {"name": BENCH, "namespace": namespace},
            "spec": {"endpoint": {"inferenceService": {"name": SERVICE, "namespace": namespace}},
                     "task": "text-to-text", "trafficScenarios": ["D(100,100)", "N(480,240)/(300,150)"],
                     "numConcurrency": [1, 4, 16], "maxTimePerIteration": 10, "maxRequestsPerIteration": 200,
                     "resultFolderName": folder,
                     "outputLocation": {"storageUri": f"pvc://{CLAIM}/{SERVICE}"},
                     "podOverride": {"image": "ghcr.io/sgl-project/genai-bench:0.1.132"}}}


def arg(args: list[str], flag: str) -> str | None:
    return args[args.index(flag) + 1] if flag in args else None


async def bench_status(client: Client, namespace: str) -> Obj:
    return (await client.get(resources.BENCHMARK_JOBS, BENCH, namespace)).get("status") or {}


async def test_benchmark_job_runs_against_a_ready_service(client: Client, namespace: str) -> None:
    volume = f"bench-{namespace}"
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": volume},
          "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "",
                   "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": "/tmp/ome-e2e-bench"},
                   "claimRef": {"namespace": namespace, "name": CLAIM}}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": CLAIM},
           "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "", "volumeName": volume,
                    "resources": {"requests": {"storage": "1Gi"}}}}
    await client.create(resources.PVS, pv)
    try:
        async with catalog(client, namespace) as cat, running_manager(client, InferenceServiceConfig(),
                                                                     config_namespace=namespace) as (ctrl, _):
            await client.create(resources.PVCS, pvc, namespace)
            # The BenchmarkJob comes first: it must wait for the service to be Ready.
            await run_and_check(client, namespace, cat.model)
    finally:
        with contextlib.suppress(errors.NotFound):
            await client.delete(resources.PVS, volume)


async def run_and_check(client: Client, namespace: str, model: str) -> None:
    bench_manager = in_process_manager(client)
    benchmarkjob.add_to_manager(bench_manager, config_namespace=namespace)
    task = asyncio.create_task(bench_manager.run())
    try:
        await create_when_served(client, resources.BENCHMARK_JOBS, benchmark(namespace, "baseline"), namespace)

        async def pending() -> bool:
            return (await bench_status(client, namespace)).get("state") == "Pending"

        await eventually(pending, timeout=30)
        with contextlib.suppress(errors.NotFound):
            await client.get(resources.JOBS, BENCH, namespace)
            raise AssertionError("the Job was created before the InferenceService existed")

        await client.create(resources.INFERENCE_SERVICES, {
            "apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": {"name": SERVICE},
            "spec": {"model": {"name": model}, "engine": {}}}, namespace)

        async def job_created() -> Obj:
            return await client.get(resources.JOBS, BENCH, namespace)

        job = await eventually(job_created, timeout=120)
        isvc = await client.get(resources.INFERENCE_SERVICES, SERVICE, namespace)
        ready = [c for c in isvc["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True", "the Job exists only once the service is Ready"

        # What OME wrote: the Job as documented.
        assert job["metadata"]["labels"] == {"benchmark": BENCH}
        assert job["metadata"]["ownerReferences"][0]["kind"] == "BenchmarkJob"
        assert job["spec"]["backoffLimit"] == 0
        pod_spec = job["spec"]["template"]["spec"]
        (container,) = pod_spec["containers"]
        assert container["image"] == "ghcr.io/sgl-project/genai-bench:0.1.132"
        assert container["command"] == ["genai-bench"]
        args = container["args"]
        url = urlsplit(isvc["status"]["url"])
        assert arg(args, "--api-base") == f"{url.scheme}://{url.netloc}"
        assert arg(args, "--api-backend") == "openai"
        engine_pods, _ = await client.list(resources.PODS, namespace,
                                           label_selector={"ome.io/inferenceservice": SERVICE, "component": "engine"})
        engine_env = {e["name"]: e.get("value") for e in engine_pods[0]["spec"]["containers"][0].get("env") or []}
        # The runtime passes `--model $(MODEL_PATH)`: the name is what the engine sees after expansion.
        assert arg(args, "--api-model-name") == engine_env["MODEL_PATH"]
        assert arg(args, "--model-tokenizer") == "/raid/models/llama-3-2-1b-instruct"
        assert arg(args, "--api-key") == "sample-key"
        assert arg(args, "--experiment-base-dir") == f"/{SERVICE}"
        assert arg(args, "--experiment-folder-name") == "baseline"
        assert pod_spec["nodeSelector"] == {model_labels.model_label_key("ClusterBaseModel", model): "Ready"}
        assert pod_spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        claim_volume = next(v for v in pod_spec["volumes"] if v["name"] == "benchmark-output-storage")
        assert claim_volume["persistentVolumeClaim"]["claimName"] == CLAIM

        # The real Job controller runs the pod; the scheduler puts it where the model is Ready; kwok completes it.
        async def completed() -> Obj:
            status = await bench_status(client, namespace)
            return status if status.get("state") == "Completed" else {}

        status = await eventually(completed, timeout=120)
        pods, _ = await client.list(resources.PODS, namespace, label_selector={"benchmark": BENCH})
        assert pods and all(p["spec"].get("nodeName") == NODE for p in pods)
        job = await client.get(resources.JOBS, BENCH, namespace)
        assert status["startTime"] == job["status"]["startTime"]
        assert status["completionTime"] == job["status"]["completionTime"]
        assert "failureMessage" not in status and status["lastReconcileTime"]

        # Settled: nothing more is written to the BenchmarkJob.
        version = (await client.get(resources.BENCHMARK_JOBS, BENCH, namespace))["metadata"]["resourceVersion"]
        await asyncio.sleep(2)
        assert (await client.get(resources.BENCHMARK_JOBS, BENCH, namespace))["metadata"]["resourceVersion"] == version

        # Run again: a new resultFolderName, then delete the Job; OME creates a new one from the current spec.
        await client.patch(resources.BENCHMARK_JOBS, BENCH, {"spec": {"resultFolderName": "second"}}, namespace)
        old_uid = job["metadata"]["uid"]
        await client.delete(resources.JOBS, BENCH, namespace, propagation_policy="Background")

        async def recreated() -> Obj:
            new = await client.get(resources.JOBS, BENCH, namespace)
            return new if new["metadata"]["uid"] != old_uid else {}

        new_job = await eventually(recreated, timeout=60)
        assert arg(new_job["spec"]["template"]["spec"]["containers"][0]["args"], "--experiment-folder-name") == "second"
        status = await eventually(completed, timeout=120)
        new_job = await client.get(resources.JOBS, BENCH, namespace)
        assert status["completionTime"] == new_job["status"]["completionTime"]
    finally:
        bench_manager.stop()
        await asyncio.wait_for(task, 30)
        with contextlib.suppress(errors.NotFound):
            await client.delete(resources.BENCHMARK_JOBS, BENCH, namespace)
