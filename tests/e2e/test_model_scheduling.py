"""Weights decide placement: the model agent for gpu-node-1 makes a `local://` model Ready there, the node
agent label reconciler turns the label into the model's status, and the InferenceService's engine pods
schedule onto gpu-node-1 only, though three other GPU nodes have room.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from ome.api import resources
from ome.framework import errors
from ome.framework.client import Client
from ome.models import labels
from tests.e2e.isvc_support import create_when_served, eventually, running_manager, runtime_body
from tests.e2e.test_models_agent import AGENT_NODE, agent_process, cleanup, local_model_dir, reconciler

Obj = dict[str, Any]


async def _engine_pods(client: Client, namespace: str) -> list[Obj]:
    pods, _ = await client.list(resources.PODS, namespace, label_selector={"component": "engine"})
    return pods


async def test_engine_pods_run_only_where_the_agent_made_the_model_ready(
    client: Client, namespace: str, kubeconfig: Path, ome_crds: list[str], tmp_path: Path
) -> None:
    suffix = namespace[-6:]
    model, runtime = f"placed-{suffix}", f"vllm-placed-{suffix}"
    key = labels.model_label_key("ClusterBaseModel", model)
    weights = local_model_dir(tmp_path)
    body = {"apiVersion": "ome.io/v1beta1", "kind": "ClusterBaseModel", "metadata": {"name": model},
            "spec": {"modelFormat": {"name": "safetensors"}, "modelFramework": {"name": "transformers"},
                     "storage": {"storageUri": f"local://{weights}", "path": str(weights)}}}
    try:
        async with (
            reconciler(client, namespace),
            agent_process(kubeconfig, namespace, tmp_path, "http://127.0.0.1:9"),
            running_manager(client),
        ):
            await create_when_served(client, resources.CLUSTER_BASE_MODELS, body)
            await create_when_served(client, resources.CLUSTER_SERVING_RUNTIMES, runtime_body(runtime))

            async def model_ready() -> bool:
                obj = await client.get(resources.CLUSTER_BASE_MODELS, model)
                return (obj.get("status") or {}).get("state") == "Ready"

            await eventually(model_ready, timeout=60)
            node = await client.get(resources.NODES, AGENT_NODE)
            assert node["metadata"]["labels"][key] == "Ready"

            isvc = {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": {"name": "placed"},
                    "spec": {"model": {"name": model}, "runtime": {"name": runtime},
                             "engine": {"minReplicas": 3, "maxReplicas": 3}}}
            await client.create(resources.INFERENCE_SERVICES, isvc, namespace)

            async def three_running() -> list[Obj] | None:
                pods = [p for p in await _engine_pods(client, namespace)
                        if (p.get("status") or {}).get("phase") == "Running"]
                return pods if len(pods) >= 3 else None

            pods = await eventually(three_running, timeout=90)
            assert {p["spec"]["nodeName"] for p in pods} == {AGENT_NODE}
            selector = pods[0]["spec"].get("nodeSelector") or {}
            affinity = str(pods[0]["spec"].get("affinity") or {})
            assert selector.get(key) == "Ready" or key in affinity
            with contextlib.suppress(errors.NotFound):
                await client.delete(resources.INFERENCE_SERVICES, "placed", namespace)
    finally:
        with contextlib.suppress(errors.NotFound):
            await client.delete(resources.CLUSTER_SERVING_RUNTIMES, runtime)
        await cleanup(client, [model], [key])
