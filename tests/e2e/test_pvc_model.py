"""A `pvc://` model served end to end (serve-models-from-pvc page, seed "How OME works"): the weights stay on
the PersistentVolumeClaim and the serving pods mount it.

The model turns Ready through its metadata Job: the modelmetadata controller creates it, the real Job
controller and scheduler run its pod on a kwok node, and this test writes the result ConfigMap as the
ome-agent in that pod would (kwok runs no container).

A hostPath PersistentVolume is bound to the claim `model-storage` by the real PV controller; the BaseModel
names it with `pvc://model-storage/<sub-path>`. Every OME controller runs in-process as ome-manager wires
them: the node agent label reconciler makes the model Ready from the Bound claim, and the InferenceService
controller (and, for OMENative, the InferenceReplica controller) turns the service into pods, which the
real scheduler places and kwok runs. No node carries a label for a pvc:// model, so a pod that selects one
would stay Pending forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from ome.api import resources
from ome.cmd import wiring
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers.modelmetadata import job as metadata_job
from ome.framework import errors
from ome.framework.client import Client
from tests.e2e.isvc_support import condition, create_when_served, eventually, in_process_manager, runtime_body

Obj = dict[str, Any]
pytestmark = pytest.mark.usefixtures("ome_crds")

CLAIM = "model-storage"
SUB_PATH = "models/llama-3-2-1b-instruct"
MODEL = "llama-3-2-1b-instruct"


def _claim_objects(namespace: str) -> tuple[Obj, Obj]:
    volume = f"models-{namespace}"
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": volume},
          "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadOnlyMany"], "storageClassName": "",
                   "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": "/tmp/ome-e2e-models"},
                   "claimRef": {"namespace": namespace, "name": CLAIM}}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": CLAIM},
           "spec": {"accessModes": ["ReadOnlyMany"], "storageClassName": "", "volumeName": volume,
                    "resources": {"requests": {"storage": "1Gi"}}}}
    return pv, pvc


LLAMA_CONFIG: Obj = {"modelType": "llama", "modelArchitecture": "LlamaForCausalLM",
                     "modelFormat": {"name": "safetensors", "version": "1.0.0"},
                     "modelFramework": {"name": "transformers", "version": "4.45.0.dev0"},
                     "modelCapabilities": ["TEXT_TO_TEXT"], "maxTokens": 131072}


def _base_model(namespace: str) -> Obj:
    # No format or framework: the metadata Job's result fills them in.
    return {"apiVersion": "ome.io/v1beta1", "kind": "BaseModel", "metadata": {"name": MODEL, "namespace": namespace},
            "spec": {"storage": {"storageUri": f"pvc://{CLAIM}/{SUB_PATH}"}}}


async def metadata_job_of(client: Client, namespace: str, model: str = MODEL) -> Obj | None:
    jobs, _ = await client.list(resources.JOBS, namespace, label_selector={metadata_job.MODEL_NAME_LABEL: model})
    return jobs[0] if jobs else None


async def write_result_as_the_agent(client: Client, config_namespace: str, namespace: str | None, *,
                                    status: str = "Ready", error: str = "", model: str = MODEL) -> None:
    """What `ome-agent model-metadata` does at its end: its entry in the model's result ConfigMap
    (`namespace` None: a ClusterBaseModel's, run with `--cluster-scoped`)."""
    entry: Obj = {"name": model, "status": status}
    if status == "Ready":
        entry["config"] = LLAMA_CONFIG
    name = metadata_job.result_configmap_name(model, namespace)
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": config_namespace,
                         "labels": {metadata_job.PVC_STATUS_LABEL: "true", metadata_job.MODEL_NAME_LABEL: model,
                                    metadata_job.MODEL_SCOPE_LABEL: "namespaced" if namespace else "cluster"},
                         "annotations": {metadata_job.LAST_ERROR_ANNOTATION: error} if error else {}},
            "data": {metadata_job.result_key(model, namespace): json.dumps(entry)}}
    try:
        await client.create(resources.CONFIGMAPS, body, config_namespace)
    except errors.AlreadyExists:
        await client.patch(resources.CONFIGMAPS, name, {"metadata": body["metadata"], "data": body["data"]},
                           config_namespace)


@contextlib.asynccontextmanager
async def served_pvc_model(client: Client, namespace: str) -> AsyncIterator[str]:
    """The claim (Bound), the BaseModel (Ready), a runtime, and every controller running; yields the runtime."""
    pv, pvc = _claim_objects(namespace)
    runtime = f"vllm-pvc-{namespace[-6:]}"
    await client.create(resources.PVS, pv)
    manager = in_process_manager(client)
    wiring.add_controllers(manager, wiring.Settings(InferenceServiceConfig(), lws_served=False,
                                                    config_namespace=namespace))
    task = asyncio.create_task(manager.run())
    try:
        await client.create(resources.PVCS, pvc, namespace)
        await create_when_served(client, resources.BASE_MODELS, _base_model(namespace), namespace)
        await create_when_served(client, resources.CLUSTER_SERVING_RUNTIMES, runtime_body(runtime))
        await eventually(lambda: metadata_job_of(client, namespace), timeout=60)
        await write_result_as_the_agent(client, namespace, namespace)

        async def model_ready() -> bool:
            claim = await client.get(resources.PVCS, CLAIM, namespace)
            model = await client.get(resources.BASE_MODELS, MODEL, namespace)
            assert (claim.get("status") or {}).get("phase") == "Bound", claim.get("status")
            return (model.get("status") or {}).get("state") == "Ready"

        await eventually(model_ready, timeout=60)
        yield runtime
    finally:
        manager.stop()
        await asyncio.wait_for(task, 30)
        with contextlib.suppress(errors.NotFound):
            await client.patch(resources.BASE_MODELS, MODEL, {"metadata": {"finalizers": None}}, namespace)
            await client.delete(resources.BASE_MODELS, MODEL, namespace)
        for res, name in ((resources.CLUSTER_SERVING_RUNTIMES, runtime),
                          (resources.PVS, pv["metadata"]["name"])):
            with contextlib.suppress(errors.NotFound):
                await client.delete(res, name)


def _isvc(name: str, runtime: str, engine: Obj) -> Obj:
    return {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": {"name": name},
            "spec": {"model": {"name": MODEL, "kind": "BaseModel"}, "runtime": {"name": runtime},
                     "engine": {"minReplicas": 1, "maxReplicas": 1, **engine}}}


async def _running_pods(client: Client, namespace: str, isvc: str, count: int) -> list[Obj] | None:
    pods, _ = await client.list(resources.PODS, namespace,
                                label_selector={"ome.io/inferenceservice": isvc, "component": "engine"})
    running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"
               and not p["metadata"].get("deletionTimestamp")]
    return running if len(running) >= count else None


def _assert_mounts_the_claim(pod: Obj) -> None:
    spec = pod["spec"]
    volumes = [v for v in spec.get("volumes") or [] if "persistentVolumeClaim" in v]
    assert [v["persistentVolumeClaim"] for v in volumes] == [{"claimName": CLAIM, "readOnly": True}], spec
    container = next(c for c in spec["containers"] if c["name"] == "ome-container")
    mount = next(m for m in container.get("volumeMounts") or [] if m["name"] == volumes[0]["name"])
    assert (mount["mountPath"], mount.get("subPath"), mount.get("readOnly")) == ("/opt/ml/model", SUB_PATH, True)
    env = {e["name"]: e.get("value") for e in container.get("env") or []}
    assert env["MODEL_PATH"] == "/opt/ml/model"
    assert not any(k.startswith("models.ome.io/") for k in spec.get("nodeSelector") or {}), spec["nodeSelector"]
    assert spec.get("nodeName", "").startswith("gpu-node-")


async def test_rawdeployment_pods_mount_the_claim_and_the_service_becomes_ready(
    client: Client, namespace: str
) -> None:
    async with served_pvc_model(client, namespace) as runtime:
        await client.create(resources.INFERENCE_SERVICES, _isvc("llama", runtime, {}), namespace)
        [pod] = await eventually(lambda: _running_pods(client, namespace, "llama", 1), timeout=90)
        _assert_mounts_the_claim(pod)

        async def ready() -> bool:
            obj = await client.get(resources.INFERENCE_SERVICES, "llama", namespace)
            cond = condition(obj, "Ready")
            return cond is not None and cond["status"] == "True"

        await eventually(ready, timeout=60)


async def test_omenative_leader_and_worker_pods_mount_the_claim(client: Client, namespace: str) -> None:
    """A `leader`/`worker` engine runs on OMENative: both pods of the Instance mount the claim."""
    async with served_pvc_model(client, namespace) as runtime:
        engine = {"leader": {}, "worker": {"size": 1}}
        await client.create(resources.INFERENCE_SERVICES, _isvc("llama-mn", runtime, engine), namespace)
        pods = await eventually(lambda: _running_pods(client, namespace, "llama-mn", 2), timeout=120)
        assert {p["metadata"]["labels"].get("ome.io/runner") for p in pods} == {"leader", "worker"}
        for pod in pods:
            assert pod["metadata"]["labels"].get("ome.io/managed-by") == "OMENative"
            _assert_mounts_the_claim(pod)
