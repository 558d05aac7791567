"""A ClusterBaseModel on a PersistentVolumeClaim on the real control plane (serve-models-from-pvc.md, "Use a
ClusterBaseModel", "The `pvc://` storage URI", "The webhook rejects the InferenceService", "Clean up").

The URI names the claim's namespace (`pvc://{namespace}:{pvc-name}/{sub-path}`): "Either way, the metadata
Job runs in the claim's namespace. The InferenceServices that serve the model must run there too". OME's
controllers run in-process as ome-manager wires them, OME's namespace a separate one; the real PV
controller binds the claim, the real Job controller, scheduler and kwok run the Job's pod, and the test
writes the result ConfigMap as the ome-agent in that pod would (`--cluster-scoped`: the ConfigMap is named
from the model's name alone).
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from ome.api import resources
from ome.controllers.modelmetadata import job as metadata_job
from ome.devcluster.kubeapi import KubeApi
from ome.framework import errors
from ome.framework.client import Client
from tests.e2e.isvc_support import condition, create_when_served, eventually, runtime_body
from tests.e2e.test_pvc_metadata_job import pvc_manager
from tests.e2e.test_pvc_model import (
    CLAIM,
    SUB_PATH,
    _assert_mounts_the_claim,
    _running_pods,
    metadata_job_of,
    write_result_as_the_agent,
)
from tests.e2e.test_webhooks_admission import CBM, Env, _webhook_message, env  # noqa: F401  (env: fixture)

Obj = dict[str, Any]
pytestmark = pytest.mark.usefixtures("ome_crds")


def cluster_model(name: str, claim_namespace: str) -> Obj:
    return {"apiVersion": "ome.io/v1beta1", "kind": "ClusterBaseModel", "metadata": {"name": name},
            "spec": {"storage": {"storageUri": f"pvc://{claim_namespace}:{CLAIM}/{SUB_PATH}"}}}


async def model_state(client: Client, name: str) -> tuple[str | None, dict[str, tuple[str, str, str]]]:
    model = await client.get(resources.CLUSTER_BASE_MODELS, name)
    status = model.get("status") or {}
    return status.get("state"), {c["type"]: (c["status"], c["reason"], c["message"])
                                 for c in status.get("conditions") or []}


async def test_cluster_base_model_runs_its_job_in_the_claims_namespace_and_serves_there(
    client: Client, namespace: str, admin_api: KubeApi
) -> None:
    model = f"llama-pvc-{namespace[-6:]}"
    runtime = f"vllm-cbm-{namespace[-6:]}"
    async with pvc_manager(client, admin_api, namespace) as ome_ns:
        try:
            await create_when_served(client, resources.CLUSTER_BASE_MODELS, cluster_model(model, namespace))

            # "the metadata Job runs in the claim's namespace", owned by the cluster-scoped model.
            job = await eventually(lambda: metadata_job_of(client, namespace, model), timeout=60)
            meta = job["metadata"]
            assert meta["name"].startswith(f"{model}-metadata-")
            assert meta["labels"] == {"models.ome/model-name": model, "models.ome/model-scope": "cluster"}
            [owner] = meta["ownerReferences"]
            assert (owner["kind"], owner["name"], owner.get("controller")) == ("ClusterBaseModel", model, True)
            pod_spec = job["spec"]["template"]["spec"]
            args = pod_spec["containers"][0]["args"]
            assert "--cluster-scoped" in args and "--basemodel-namespace" not in args
            assert args[args.index("--basemodel-name") + 1] == model
            assert pod_spec["serviceAccountName"] == "ome-model-metadata"
            assert pod_spec["volumes"][0]["persistentVolumeClaim"] == {"claimName": CLAIM, "readOnly": True}
            assert pod_spec["containers"][0]["volumeMounts"][0]["subPath"] == SUB_PATH
            # The ServiceAccount in the claim's namespace and the RoleBinding in OME's, as for a BaseModel.
            await client.get(resources.SERVICE_ACCOUNTS, "ome-model-metadata", namespace)
            binding = await client.get(resources.ROLE_BINDINGS, f"ome-model-metadata-{namespace}", ome_ns)
            assert binding["subjects"][0]["namespace"] == namespace

            async def extracting() -> bool:
                state, conds = await model_state(client, model)
                return state == "In_Transit" and conds.get("Ready", ("",) * 3)[1] == "PVCMetadataExtracting" \
                    and conds.get("SourceReachable", ("",) * 3)[0] == "True"

            await eventually(extracting, timeout=30)

            # The Job's pod runs in the claim's namespace (real Job controller, scheduler and kwok).
            async def job_complete() -> bool:
                live = await client.get(resources.JOBS, meta["name"], namespace)
                return any(c["type"] == "Complete" and c["status"] == "True"
                           for c in (live.get("status") or {}).get("conditions") or [])

            await eventually(job_complete, timeout=90)
            assert await extracting()  # done without a result: still In_Transit
            # The agent's ConfigMap for a cluster-scoped model: named from the model's name alone.
            await write_result_as_the_agent(client, ome_ns, None, model=model)

            async def ready() -> Obj | None:
                obj = await client.get(resources.CLUSTER_BASE_MODELS, model)
                return obj if (obj.get("status") or {}).get("state") == "Ready" else None

            ready_model = await eventually(ready, timeout=30)
            spec, status = ready_model["spec"], ready_model["status"]
            assert (spec["modelArchitecture"], spec["modelFormat"]["name"], spec["modelFramework"]["name"],
                    spec["modelFramework"]["version"]) == ("LlamaForCausalLM", "safetensors", "transformers",
                                                           "4.45.0.dev0")
            assert {c["type"]: c["reason"] for c in status["conditions"]} == {
                "SourceReachable": "PVCValidated", "Ready": "PVCMetadataReady"}
            assert status.get("nodesReady") in (None, [])

            # "In `isvc.yaml`, leave out `kind: BaseModel`. The metadata Job and the InferenceService still
            # run in `llama-demo`": the service's pods there mount the claim.
            await create_when_served(client, resources.CLUSTER_SERVING_RUNTIMES, runtime_body(runtime))
            isvc = {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": {"name": "llama"},
                    "spec": {"model": {"name": model}, "runtime": {"name": runtime},
                             "engine": {"minReplicas": 1, "maxReplicas": 1}}}
            await client.create(resources.INFERENCE_SERVICES, isvc, namespace)
            [pod] = await eventually(lambda: _running_pods(client, namespace, "llama", 1), timeout=90)
            _assert_mounts_the_claim(pod)

            async def isvc_ready() -> bool:
                cond = condition(await client.get(resources.INFERENCE_SERVICES, "llama", namespace), "Ready")
                return cond is not None and cond["status"] == "True"

            await eventually(isvc_ready, timeout=60)

            # "Deleting the model deletes its metadata Jobs"; its result goes too.
            await client.delete(resources.CLUSTER_BASE_MODELS, model)

            async def cleaned_up() -> bool:
                jobs, _ = await client.list(resources.JOBS, namespace,
                                            label_selector={metadata_job.MODEL_NAME_LABEL: model})
                if any(not j["metadata"].get("deletionTimestamp") for j in jobs):
                    return False
                try:
                    await client.get(resources.CONFIGMAPS, metadata_job.result_configmap_name(model, None), ome_ns)
                    return False
                except errors.NotFound:
                    return True

            await eventually(cleaned_up, timeout=60)
            # "OME keeps the ServiceAccount ... and the RoleBinding", for other models of the namespace.
            await client.get(resources.SERVICE_ACCOUNTS, "ome-model-metadata", namespace)
            await client.get(resources.ROLE_BINDINGS, f"ome-model-metadata-{namespace}", ome_ns)
        finally:
            for res, name in ((resources.CLUSTER_BASE_MODELS, model), (resources.CLUSTER_SERVING_RUNTIMES, runtime)):
                with contextlib.suppress(errors.NotFound):
                    await client.delete(res, name)


async def test_a_service_outside_the_claims_namespace_is_rejected(env: Env) -> None:  # noqa: F811
    """serve-models-from-pvc.md, "The webhook rejects the InferenceService": the quoted text exactly."""
    model = f"pvc-{env.namespace[-6:]}"  # short: the client keeps 500 characters of an API error
    await env.create_cluster(CBM, cluster_model(model, "llama-demo"))
    message = await env.denial("llama", model={"name": model}, engine={})
    assert message == (
        f'ClusterBaseModel "{model}" references PVC in namespace "llama-demo", but InferenceService is in namespace '
        f'"{env.namespace}"; Kubernetes does not allow pods to mount PVCs from another namespace. Either move the '
        f'InferenceService to namespace "llama-demo" or replicate the PVC into namespace "{env.namespace}".')
