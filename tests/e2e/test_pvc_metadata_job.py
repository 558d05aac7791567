"""The metadata Job of a `pvc://` model on the real control plane (serve-models-from-pvc.md, Steps 2-3,
"Troubleshooting", "Clean up").

OME's controllers run in-process as ome-manager wires them, with OME's namespace a separate one, so the
ServiceAccount and RoleBinding path is taken. The real PV controller binds the claim, the real Job
controller makes the pod, the real scheduler places it on a kwok node and kwok completes it; kwok runs no
container, so the test writes the result ConfigMap as the ome-agent in the pod would. What is checked is
what OME writes and how it follows the Job and the result.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from ome.api import resources
from ome.cmd import wiring
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers.modelmetadata import job as metadata_job
from ome.devcluster.kubeapi import KubeApi
from ome.framework import errors
from ome.framework.client import Client
from tests.e2e.isvc_support import create_when_served, eventually, in_process_manager
from tests.e2e.test_pvc_model import (
    CLAIM,
    MODEL,
    _base_model,
    _claim_objects,
    metadata_job_of,
    write_result_as_the_agent,
)

Obj = dict[str, Any]
pytestmark = pytest.mark.usefixtures("ome_crds")
JOB = "llama-3-2-1b-instruct-metadata-"


@contextlib.asynccontextmanager
async def pvc_manager(client: Client, admin_api: KubeApi, namespace: str) -> AsyncIterator[str]:
    """OME's controllers in-process with OME's namespace a separate one (yielded), and a claim in
    `namespace` that the real PV controller binds; all torn down afterwards."""
    ome_ns = f"ome-{uuid.uuid4().hex[:6]}"
    admin_api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ome_ns}})
    pv, pvc = _claim_objects(namespace)
    manager = in_process_manager(client)
    task: asyncio.Task[None] | None = None
    try:
        await client.create(resources.PVS, pv)
        wiring.add_controllers(manager, wiring.Settings(InferenceServiceConfig(), lws_served=False,
                                                        config_namespace=ome_ns))
        task = asyncio.create_task(manager.run())
        await client.create(resources.PVCS, pvc, namespace)
        yield ome_ns
    finally:
        if task is not None:
            manager.stop()
            await asyncio.wait_for(task, 30)
        with contextlib.suppress(errors.NotFound):
            await client.delete(resources.PVS, pv["metadata"]["name"])
        with contextlib.suppress(Exception):
            admin_api.request("DELETE", f"/api/v1/namespaces/{ome_ns}")


async def ready_condition(client: Client, namespace: str) -> tuple[str, str, str] | None:
    model = await client.get(resources.BASE_MODELS, MODEL, namespace)
    status = model.get("status") or {}
    cond = next((c for c in status.get("conditions") or [] if c["type"] == "Ready"), None)
    return (str(status.get("state")), cond["reason"], cond["message"]) if cond else None


async def test_metadata_job_runs_and_its_result_makes_the_model_ready(
    client: Client, namespace: str, admin_api: KubeApi
) -> None:
    async with pvc_manager(client, admin_api, namespace) as ome_ns:
        await create_when_served(client, resources.BASE_MODELS, _base_model(namespace), namespace)

        # "OME now runs a metadata Job that reads the model's config.json from the claim."
        job = await eventually(lambda: metadata_job_of(client, namespace), timeout=60)
        assert job["metadata"]["name"].startswith(JOB)
        assert job["metadata"]["labels"][metadata_job.MODEL_NAME_LABEL] == MODEL
        pod_spec = job["spec"]["template"]["spec"]
        assert pod_spec["serviceAccountName"] == "ome-model-metadata"
        assert pod_spec["volumes"][0]["persistentVolumeClaim"]["claimName"] == CLAIM
        # "OME creates it in the claim's namespace if it's missing", and the RoleBinding in OME's.
        await client.get(resources.SERVICE_ACCOUNTS, "ome-model-metadata", namespace)
        binding = await client.get(resources.ROLE_BINDINGS, f"ome-model-metadata-{namespace}", ome_ns)
        assert binding["metadata"]["labels"] == {"models.ome/metadata-source-namespace": namespace}

        async def extracting() -> bool:
            found = await ready_condition(client, namespace)
            return found is not None and found[:2] == ("In_Transit", "PVCMetadataExtracting")

        await eventually(extracting, timeout=30)

        # The real Job controller and scheduler run its pod; kwok completes it.
        async def job_complete() -> bool:
            live = await client.get(resources.JOBS, job["metadata"]["name"], namespace)
            return any(c["type"] == "Complete" and c["status"] == "True"
                       for c in (live.get("status") or {}).get("conditions") or [])

        await eventually(job_complete, timeout=90)
        assert await extracting()  # done without a result: still In_Transit
        await write_result_as_the_agent(client, ome_ns, namespace)

        async def ready() -> Obj | None:
            model = await client.get(resources.BASE_MODELS, MODEL, namespace)
            return model if (model.get("status") or {}).get("state") == "Ready" else None

        model = await eventually(ready, timeout=30)
        # "Check what OME recorded": ARCHITECTURE, FORMAT, FRAMEWORK, VERSION.
        spec = model["spec"]
        assert (spec["modelArchitecture"], spec["modelFormat"]["name"], spec["modelFramework"]["name"],
                spec["modelFramework"]["version"]) == ("LlamaForCausalLM", "safetensors", "transformers",
                                                       "4.45.0.dev0")
        reasons = {c["type"]: c["reason"] for c in model["status"]["conditions"]}
        assert reasons == {"SourceReachable": "PVCValidated", "Ready": "PVCMetadataReady"}

        # "The Job failed. The message has its error." and "delete the Job, and OME creates a new one".
        error = "no model_index.json or config.json found in /model"
        await write_result_as_the_agent(client, ome_ns, namespace, status="Failed", error=error)

        async def failed() -> bool:
            return await ready_condition(client, namespace) == ("Failed", "PVCMetadataExtractionFailed",
                                                                error)

        await eventually(failed, timeout=30)
        await client.delete(resources.JOBS, job["metadata"]["name"], namespace, propagation_policy="Background")

        async def recreated() -> Obj | None:
            live = await metadata_job_of(client, namespace)
            return live if live and live["metadata"]["uid"] != job["metadata"]["uid"] else None

        await eventually(recreated, timeout=60)
        await write_result_as_the_agent(client, ome_ns, namespace)
        await eventually(ready, timeout=60)

        # "Deleting the model deletes its metadata Jobs."
        await client.delete(resources.BASE_MODELS, MODEL, namespace)
        await eventually(lambda: _gone(client, namespace, ome_ns), timeout=60)


async def _gone(client: Client, namespace: str, ome_ns: str) -> bool:
    jobs, _ = await client.list(resources.JOBS, namespace, label_selector={metadata_job.MODEL_NAME_LABEL: MODEL})
    live = [j for j in jobs if not j["metadata"].get("deletionTimestamp")]
    try:
        await client.get(resources.CONFIGMAPS, metadata_job.result_configmap_name(MODEL, namespace), ome_ns)
        return False
    except errors.NotFound:
        return not live


async def test_a_claim_that_is_not_bound_is_pvc_not_bound_and_gets_no_job(client: Client, namespace: str) -> None:
    """`In_Transit` `PVCNotBound`: "The claim isn't Bound yet." A missing claim: `Failed` `PVCNotFound`."""
    manager = in_process_manager(client)
    wiring.add_controllers(manager, wiring.Settings(InferenceServiceConfig(), lws_served=False,
                                                    config_namespace=namespace))
    task = asyncio.create_task(manager.run())
    try:
        await create_when_served(client, resources.BASE_MODELS, _base_model(namespace), namespace)

        async def not_found() -> bool:
            return await ready_condition(client, namespace) == (
                "Failed", "PVCNotFound", f"PVC {namespace}/{CLAIM} not found")

        await eventually(not_found, timeout=30)
        # A claim with a storage class nobody provisions stays Pending.
        await client.create(resources.PVCS, {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": CLAIM},
            "spec": {"accessModes": ["ReadOnlyMany"], "storageClassName": "nobody-provisions-this",
                     "resources": {"requests": {"storage": "1Gi"}}}}, namespace)

        async def not_bound() -> bool:
            found = await ready_condition(client, namespace)
            return found is not None and found[:2] == ("In_Transit", "PVCNotBound")

        await eventually(not_bound, timeout=30)
        assert await metadata_job_of(client, namespace) is None
    finally:
        manager.stop()
        await asyncio.wait_for(task, 30)
