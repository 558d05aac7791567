"""Models on nodes, end to end: the model agent (a real subprocess for gpu-node-1) and the node agent
label reconciler (in a manager) against the shared control plane and a local fake Hugging Face hub.

Everything cluster-scoped is suffixed with the test namespace, and the status ConfigMaps go to the test
namespace (the agent's and reconciler's `namespace`), so concurrent tests never see each other's reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from ome.api import resources
from ome.controllers import nodeagent
from ome.framework import errors
from ome.framework.client import Client
from ome.framework.reconcile import Request
from ome.models import labels
from tests.e2e.isvc_support import create_when_served, eventually, in_process_manager
from tests.support.fake_hub import FakeHub, Repo, tiny_llama_files

Obj = dict[str, Any]
AGENT_NODE = "gpu-node-1"
OTHER_NODES = ("gpu-node-0", "gpu-node-2", "gpu-node-3")


class CountingWriter:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.writes: list[tuple[str, str]] = []

    async def patch(self, res: resources.Resource, name: str, patch: Obj, namespace: str | None = None,
                    **kwargs: Any) -> Obj:
        self.writes.append((res.kind, name))
        return await self.client.patch(res, name, patch, namespace, **kwargs)


@contextlib.asynccontextmanager
async def reconciler(client: Client, namespace: str) -> AsyncIterator[tuple[Any, CountingWriter]]:
    manager = in_process_manager(client)
    [ctrl] = nodeagent.add_to_manager(manager, config_namespace=namespace)
    writer = CountingWriter(client)
    ctrl._reconciler._writer = writer  # type: ignore[attr-defined]
    task = asyncio.create_task(manager.run())
    try:
        yield ctrl, writer
    finally:
        manager.stop()
        await asyncio.wait_for(task, 30)


@contextlib.asynccontextmanager
async def agent_process(kubeconfig: Path, namespace: str, root: Path, hub_url: str) -> AsyncIterator[Path]:
    log_path = root / "agent.log"
    env = {**os.environ, "NODE_NAME": AGENT_NODE, "HF_ENDPOINT": hub_url}
    with log_path.open("wb") as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "ome.modelagent", "--kubeconfig", str(kubeconfig), "--namespace", namespace,
            "--models-root-dir", str(root / "models"), "--progress-interval", "0.2",
            "--health-probe-bind-address", "0", "--log-format", "json", stdout=log, stderr=log, env=env)
        try:
            yield log_path
        finally:
            if proc.returncode is None:
                proc.terminate()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(proc.wait(), 15)
            if proc.returncode is None:
                proc.kill()


def local_model_dir(root: Path) -> Path:
    path = root / "llama-local"
    path.mkdir(parents=True)
    for name, data in tiny_llama_files().items():
        (path / name).write_bytes(data)
    return path


def model_body(kind: str, name: str, uri: str, path: str | None = None) -> Obj:
    storage: Obj = {"storageUri": uri}
    if path:
        storage["path"] = path
    return {"apiVersion": "ome.io/v1beta1", "kind": kind, "metadata": {"name": name}, "spec": {"storage": storage}}


async def node_labels(client: Client, node: str) -> dict[str, str]:
    obj = await client.get(resources.NODES, node)
    return dict(obj["metadata"].get("labels") or {})


async def state_of(client: Client, res: resources.Resource, name: str, ns: str | None = None) -> Obj | None:
    obj = await client.get(res, name, ns)
    return obj if (obj.get("status") or {}).get("state") in ("Ready", "Failed") else None


async def cleanup(client: Client, cluster_models: list[str], keys: list[str]) -> None:
    for name in cluster_models:
        with contextlib.suppress(errors.NotFound):
            await client.patch(resources.CLUSTER_BASE_MODELS, name, {"metadata": {"finalizers": None}})
            await client.delete(resources.CLUSTER_BASE_MODELS, name)
    for node in (AGENT_NODE, *OTHER_NODES):
        present = await node_labels(client, node)
        drop = {k: None for k in keys if k in present}
        if drop:
            await client.patch(resources.NODES, node, {"metadata": {"labels": drop}})


async def test_agent_makes_models_ready_on_its_node_and_status_follows(
    client: Client, namespace: str, ome_crds: list[str], kubeconfig: Path, tmp_path: Path
) -> None:
    suffix = namespace[-6:]
    local, hfm, missing = f"local-{suffix}", f"tiny-hf-{suffix}", f"missing-{suffix}"
    local_key = labels.model_label_key("ClusterBaseModel", local)
    hf_key = labels.model_label_key("ClusterBaseModel", hfm)
    missing_key = labels.model_label_key("BaseModel", missing, namespace)
    path = local_model_dir(tmp_path)
    try:
        async with FakeHub({"org/tiny": Repo(tiny_llama_files())}) as hub, \
                reconciler(client, namespace) as (ctrl, writer), \
                agent_process(kubeconfig, namespace, tmp_path, hub.url) as agent_log:
            await create_when_served(client, resources.CLUSTER_BASE_MODELS,
                                     model_body("ClusterBaseModel", local, f"local://{path}"))
            await create_when_served(client, resources.BASE_MODELS,
                                     model_body("BaseModel", missing, "local:///nonexistent/weights"), namespace)
            await create_when_served(client, resources.CLUSTER_BASE_MODELS,
                                     model_body("ClusterBaseModel", hfm, "hf://org/tiny",
                                                str(tmp_path / "models" / "tiny")))

            # local:// -> Ready on the agent's node only, and the status and spec follow.
            ready = await eventually(lambda: state_of(client, resources.CLUSTER_BASE_MODELS, local), timeout=60)
            assert ready["status"]["state"] == "Ready" and ready["status"]["nodesReady"] == [AGENT_NODE]
            assert (await node_labels(client, AGENT_NODE))[local_key] == "Ready"
            for other in OTHER_NODES:
                assert local_key not in await node_labels(client, other)
            filled = await eventually(lambda: _spec_filled(client, local), timeout=30)
            fmt = filled["spec"]["modelFormat"]
            assert (fmt["name"], fmt["version"]) == ("safetensors", "1.0.0")

            # A missing path: Failed on the node, and the model's status says why.
            failed = await eventually(lambda: _failed_with_reason(client, missing, namespace), timeout=60)
            assert failed["status"]["state"] == "Failed"
            assert failed["status"]["nodesFailed"] == [AGENT_NODE]
            assert (await node_labels(client, AGENT_NODE))[missing_key] == "Failed"
            message = failed["status"]["conditions"][0]["message"]
            assert "local path /nonexistent/weights does not exist" in message

            # hf:// from the fake hub: downloaded, verified, published, Ready.
            hf_ready = await eventually(lambda: state_of(client, resources.CLUSTER_BASE_MODELS, hfm), timeout=90)
            assert hf_ready["status"]["state"] == "Ready"
            assert (tmp_path / "models" / "tiny" / "model.safetensors").is_file()
            assert any(m == "GET" and "/resolve/" in p for m, p, _ in hub.requests)
            assert (await node_labels(client, AGENT_NODE))[hf_key] == "Ready"

            # A reconcile with nothing new makes no API write.
            await asyncio.sleep(1)
            before = len(writer.writes)
            ctrl.queue.add(Request("", local))
            ctrl.queue.add(Request(namespace, missing))
            await asyncio.sleep(2)
            assert writer.writes[before:] == []

            # Deleting: the agent drops its label, then the finalizer is released and the model is gone.
            await client.delete(resources.CLUSTER_BASE_MODELS, local)
            await eventually(lambda: _gone(client, local), timeout=60)
            assert local_key not in await node_labels(client, AGENT_NODE)

            logs = [json.loads(line) for line in agent_log.read_text().splitlines() if line.startswith("{")]
            events = {entry.get("event") for entry in logs}
            assert {"status to Updating before download", "model ready on node", "model failed on node"} <= events
            assert any(e.get("event") == "download started" and e.get("total_bytes") for e in logs)
    finally:
        await cleanup(client, [local, hfm], [local_key, hf_key, missing_key])


async def _failed_with_reason(client: Client, name: str, namespace: str) -> Obj | None:
    obj = await client.get(resources.BASE_MODELS, name, namespace)
    conditions = (obj.get("status") or {}).get("conditions") or [{}]
    return obj if "does not exist" in conditions[0].get("message", "") else None


async def _spec_filled(client: Client, name: str) -> Obj | None:
    obj = await client.get(resources.CLUSTER_BASE_MODELS, name)
    return obj if (obj.get("spec") or {}).get("modelArchitecture") == "LlamaForCausalLM" else None


async def _gone(client: Client, name: str) -> bool:
    try:
        await client.get(resources.CLUSTER_BASE_MODELS, name)
    except errors.NotFound:
        return True
    return False
