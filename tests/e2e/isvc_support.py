"""Shared plumbing for the InferenceService e2e tests: a model Ready on a node, a runtime, the manager.

The model is made Ready the way the node agent would: the node gets the model's label with value Ready,
and the model's status.state becomes Ready. Cluster-scoped objects are suffixed with the test namespace
and deleted afterwards, so tests on the shared cluster never collide.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ome.api import resources
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers.autoscaler import controller as autoscaler_controller
from ome.controllers.autoscaler.entries import AutoscalerEntries
from ome.devcluster.operator_config import CHART_PDB
from ome.framework import errors
from ome.framework.client import Client
from ome.framework.controller import Controller
from ome.framework.manager import Manager, ManagerOptions
from ome.models import labels as model_labels

Obj = dict[str, Any]
NODE = "gpu-node-0"
CHART_CONFIG = InferenceServiceConfig(podDisruptionBudget=CHART_PDB)
"""The managers' default here: a chart install's budgets (each mode `maxUnavailable: 1`, which the chart
writes and the manifests leave out), so a component that sets no budget gets a PodDisruptionBudget."""


def runtime_body(name: str, *, router: bool = False) -> Obj:
    spec: Obj = {
        "supportedModelFormats": [
            {
                "modelFormat": {"name": "safetensors"},
                "modelFramework": {"name": "transformers"},
                "autoSelect": True,
            }
        ],
        "engineConfig": {
            "runner": {
                "name": "ome-container",
                "image": "vllm/vllm-openai:v0.9.0",
                "args": ["--model", "$(MODEL_PATH)"],
                "ports": [{"containerPort": 8080, "name": "http1"}],
            }
        },
    }
    if router:
        spec["routerConfig"] = {"runner": {"name": "router", "image": "ome/router:v1"}}
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterServingRuntime",
        "metadata": {"name": name},
        "spec": spec,
    }


def model_body(name: str) -> Obj:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterBaseModel",
        "metadata": {"name": name},
        "spec": {
            "modelFormat": {"name": "safetensors"},
            "modelFramework": {"name": "transformers"},
            "storage": {
                "storageUri": "hf://meta-llama/Llama-3.2-1B-Instruct",
                "path": "/raid/models/llama-3-2-1b-instruct",
            },
        },
    }


@dataclass
class Catalog:
    model: str
    runtime: str


async def create_when_served(
    client: Client, res: resources.Resource, body: Obj, ns: str | None = None
) -> Obj:
    for _ in range(100):  # discovery of freshly installed CRDs can lag a moment
        try:
            return await client.create(res, body, ns)
        except errors.NotFound:
            await asyncio.sleep(0.1)
    raise AssertionError(f"{res.kind} never served")


@contextlib.asynccontextmanager
async def catalog(client: Client, namespace: str, *, router: bool = False) -> AsyncIterator[Catalog]:
    """A ClusterBaseModel Ready on gpu-node-0 and a ClusterServingRuntime, both unique to the test."""
    model, runtime = f"llama-{namespace[-6:]}", f"vllm-{namespace[-6:]}"
    label = model_labels.model_label_key("ClusterBaseModel", model)
    await create_when_served(client, resources.CLUSTER_BASE_MODELS, model_body(model))
    await client.patch(
        resources.CLUSTER_BASE_MODELS,
        model,
        {"status": {"state": "Ready", "nodesReady": [NODE]}},
        subresource="status",
    )
    await create_when_served(client, resources.CLUSTER_SERVING_RUNTIMES, runtime_body(runtime, router=router))
    await client.patch(resources.NODES, NODE, {"metadata": {"labels": {label: "Ready"}}})
    try:
        yield Catalog(model, runtime)
    finally:
        await client.patch(resources.NODES, NODE, {"metadata": {"labels": {label: None}}})
        for res, name in (
            (resources.CLUSTER_SERVING_RUNTIMES, runtime),
            (resources.CLUSTER_BASE_MODELS, model),
        ):
            with contextlib.suppress(errors.NotFound):
                await client.delete(res, name)


class CountingWriter:
    """Counts the controller's API writes (apply and delete) on the way to the real client."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.writes: list[tuple[str, str, str]] = []

    async def apply(self, res: resources.Resource, obj: Obj, **kwargs: Any) -> Obj:
        self.writes.append(("apply", res.kind, obj["metadata"]["name"]))
        return await self.client.apply(res, obj, **kwargs)

    async def create(self, res: resources.Resource, obj: Obj, namespace: str | None = None, **kwargs: Any) -> Obj:
        self.writes.append(("create", res.kind, obj["metadata"]["name"]))
        return await self.client.create(res, obj, namespace, **kwargs)

    async def get(self, res: resources.Resource, name: str, namespace: str | None = None) -> Obj:
        return await self.client.get(res, name, namespace)

    async def patch(self, res: resources.Resource, name: str, patch: Obj, namespace: str | None = None,
                    **kwargs: Any) -> Obj:
        self.writes.append(("patch", res.kind, name))
        return await self.client.patch(res, name, patch, namespace, **kwargs)

    async def delete(
        self, res: resources.Resource, name: str, namespace: str | None = None, **kwargs: Any
    ) -> Any:
        self.writes.append(("delete", res.kind, name))
        return await self.client.delete(res, name, namespace, **kwargs)


def in_process_manager(client: Client) -> Manager:
    """A manager inside the test process: no servers, no Lease, no signal handlers."""
    return Manager(client, ManagerOptions(metrics_bind_address="0", health_probe_bind_address="0",
                                          leader_election=None, install_signal_handlers=False))


@contextlib.asynccontextmanager
async def running_manager(
    client: Client, config: InferenceServiceConfig | None = None, *, config_namespace: str = "ome",
    config_source: Any = None,
) -> AsyncIterator[tuple[Controller, CountingWriter]]:
    from ome.controllers.inferenceservice import controller as isvc_controller

    manager = in_process_manager(client)
    entries = AutoscalerEntries()
    ctrl = isvc_controller.add_to_manager(
        manager,
        config or CHART_CONFIG,
        max_concurrent_reconciles=2,
        config_namespace=config_namespace,
        config_source=config_source,
        autoscaler_entries=entries,
    )
    writer = CountingWriter(client)
    ctrl._reconciler._writer = writer  # type: ignore[attr-defined]  # count writes without touching the client
    ctrl._reconciler._posts.client = writer  # type: ignore[attr-defined]  # its creates by POST too
    # HPAs, ScaledObjects and PDBs are the autoscaler controller's, next to it in the same manager.
    scaling = config or CHART_CONFIG
    autoscaler_controller.add_to_manager(manager, scaling, config_namespace=config_namespace, entries=entries,
                                         features=await autoscaler_controller.detect(client, scaling))
    task = asyncio.create_task(manager.run())
    try:
        yield ctrl, writer
    finally:
        manager.stop()
        await asyncio.wait_for(task, 30)


async def eventually(
    check: Callable[[], Awaitable[Any]], timeout: float = 60.0, interval: float = 0.25
) -> Any:
    """Poll `check` until it returns a truthy value (returned) or raises nothing past the deadline."""
    deadline = asyncio.get_running_loop().time() + timeout
    last: BaseException | None = None
    while asyncio.get_running_loop().time() < deadline:
        try:
            result = await check()
            if result:
                return result
        except (AssertionError, errors.NotFound) as exc:
            last = exc
        await asyncio.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s: {last!r}")


def condition(obj: Obj, type_: str) -> Obj | None:
    return next(
        (c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == type_), None
    )


@contextlib.asynccontextmanager
async def manager_running(mgr: Manager) -> AsyncIterator[Manager]:
    """Runs `mgr` until the block ends, then stops it."""
    task = asyncio.create_task(mgr.run())
    try:
        yield mgr
    finally:
        mgr.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 30)


async def grouped_rollout_manager(client: Client, config: InferenceServiceConfig) -> Manager:
    """An in-process manager with what a grouped OMENative rollout runs on: the InferenceService,
    autoscaler, replica, Instance rollout (short retries) and rollout coordination controllers."""
    from ome.controllers import inferencereplica, instancerollout  # noqa: PLC0415
    from ome.controllers.inferenceservice import controller as isvc_controller  # noqa: PLC0415
    from ome.controllers.rolloutcoordination import setup as rolloutcoordination  # noqa: PLC0415
    from ome.omenative.rollout_retry import RetryPolicy  # noqa: PLC0415
    from ome.omenative.rollout_settings import RolloutSettings  # noqa: PLC0415
    from ome.omenative.settings import InferenceReplicaSettings  # noqa: PLC0415

    mgr = in_process_manager(client)
    entries = AutoscalerEntries()
    isvc_controller.add_to_manager(mgr, config, max_concurrent_reconciles=2, config_namespace="ome",
                                   autoscaler_entries=entries)
    autoscaler_controller.add_to_manager(mgr, config, config_namespace="ome", entries=entries,
                                         features=await autoscaler_controller.detect(client, config))
    inferencereplica.add_to_manager(mgr, InferenceReplicaSettings(status_encoding="Rows", retry_initial_delay=1.0))
    settings = RolloutSettings(retry=RetryPolicy(max_attempts=2, initial_delay=1.0, multiplier=1.0, max_delay=2.0),
                               instance_ready_timeout=120.0, max_concurrent_reconciles=2)
    instancerollout.add_to_manager(mgr, settings)
    rolloutcoordination.add_to_manager(mgr, ratio_tolerance=settings.ratio_tolerance)
    return mgr
