"""spec.replicaRefs on the real control plane with kwok: an InferenceService fronting a standalone replica.

Both controllers run in one manager, as in ome-manager: the InferenceReplica controller runs the replica's
Instances, and the InferenceService controller puts the stable Services in front of its pods, mirrors it
into status, reports ReplicaRefMissing while it is gone and catches up when it returns.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from ome.api import resources
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers import inferencereplica
from ome.controllers.inferenceservice import controller as isvc_controller
from ome.framework import errors
from ome.framework.client import Client
from ome.framework.controller import Controller
from ome.framework.reconcile import Request
from ome.omenative.settings import InferenceReplicaSettings
from tests.e2e.isvc_support import CountingWriter, condition, eventually, in_process_manager

Obj = dict[str, Any]
pytestmark = pytest.mark.usefixtures("ome_crds")

POOL_SELECTOR = {"ome.io/inferenceservice": "pool", "component": "engine", "ome.io/managed-by": "OMENative"}


def standalone_replica(name: str = "pool") -> Obj:
    template = {
        "metadata": {"labels": {"team": "llm"}},
        "spec": {
            "containers": [
                {
                    "name": "ome-container",
                    "image": "vllm:1",
                    "ports": [{"containerPort": 8000, "name": "http"}],
                    "resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}},
                }
            ],
            "tolerations": [{"operator": "Exists"}],
        },
    }
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceReplica",
        "metadata": {"name": name},
        "spec": {
            "component": "engine",
            "replicas": 1,
            "runners": [{"name": "default", "size": 1, "template": template}],
        },
    }


def fronting_service(name: str, replica: str) -> Obj:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name},
        "spec": {"replicaRefs": {"engine": [replica]}},
    }


@contextlib.asynccontextmanager
async def both_controllers(client: Client) -> AsyncIterator[tuple[Controller, CountingWriter]]:
    manager = in_process_manager(client)
    ctrl = isvc_controller.add_to_manager(manager, InferenceServiceConfig(), max_concurrent_reconciles=2)
    inferencereplica.add_to_manager(manager, InferenceReplicaSettings(status_encoding="Rows"))
    writer = CountingWriter(client)
    ctrl._reconciler._writer = writer  # type: ignore[attr-defined]  # count writes without touching the client
    task = asyncio.create_task(manager.run())
    try:
        yield ctrl, writer
    finally:
        manager.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 30)


async def engine_ready(client: Client, namespace: str, name: str, reason: str) -> Obj | None:
    obj = await client.get(resources.INFERENCE_SERVICES, name, namespace)
    cond = condition(obj, "EngineReady")
    return obj if cond is not None and cond.get("reason") == reason else None


async def test_service_fronts_a_standalone_replica_and_follows_it(client: Client, namespace: str) -> None:
    async with both_controllers(client) as (ctrl, writer):
        await client.create(resources.INFERENCE_REPLICAS, standalone_replica(), namespace)
        await client.create(resources.INFERENCE_SERVICES, fronting_service("fronted", "pool"), namespace)

        async def ready() -> Obj | None:
            obj = await engine_ready(client, namespace, "fronted", "Ready")
            top = condition(obj, "Ready") if obj is not None else None
            return obj if top is not None and top["status"] == "True" else None

        obj = await eventually(ready, timeout=120)
        engine = obj["status"]["components"]["engine"]
        assert engine["scaleTargetRef"] == {
            "apiVersion": "ome.io/v1beta1",
            "kind": "InferenceReplica",
            "name": "pool",
        }
        assert engine["lifecycle"]["replicas"] == 1 and engine["lifecycle"]["readyReplicas"] == 1
        assert engine["url"] == f"http://fronted-engine.{namespace}.svc.cluster.local"
        assert obj["status"]["url"] == f"http://fronted.{namespace}.svc.cluster.local:8000"
        assert condition(obj, "RuntimeReady") is None and "modelStatus" not in obj["status"]

        stable = await client.get(resources.SERVICES, "fronted-engine", namespace)
        assert stable["spec"]["selector"] == POOL_SELECTOR
        assert [p["port"] for p in stable["spec"]["ports"]] == [8000]
        assert stable["metadata"]["ownerReferences"][0]["name"] == "fronted"
        external = await client.get(resources.SERVICES, "fronted", namespace)
        assert external["spec"]["selector"] == {"ome.io/inferenceservice": "pool", "component": "engine"}

        # The service writes nothing on the replica: no owner, no field of its field manager.
        pool = await client.get(resources.INFERENCE_REPLICAS, "pool", namespace)
        assert not pool["metadata"].get("ownerReferences")
        managers = {m.get("manager") for m in pool["metadata"].get("managedFields") or []}
        assert "ome-inferenceservice-controller" not in managers
        assert not [w for w in writer.writes if w[1] == "InferenceReplica"]

        # Settled: reconciles write nothing (the replica's status may still move briefly, so wait for it).
        reconciler = ctrl._reconciler
        request = Request(namespace, "fronted")

        async def quiet() -> bool:
            await asyncio.sleep(0.5)
            before = len(writer.writes)
            await reconciler.reconcile(request)
            return len(writer.writes) == before

        await eventually(quiet, timeout=30)
        before = len(writer.writes)
        for _ in range(3):
            await reconciler.reconcile(request)
        assert writer.writes[before:] == []

        # The replica goes: the role reports ReplicaRefMissing with a Warning event; the Service stays.
        await client.delete(resources.INFERENCE_REPLICAS, "pool", namespace)
        missing = await eventually(
            lambda: engine_ready(client, namespace, "fronted", "ReplicaRefMissing"), timeout=120
        )
        cond = condition(missing, "EngineReady")
        assert cond is not None and cond["status"] == "False"
        assert "InferenceReplica" in cond["message"] and "pool" in cond["message"]
        assert condition(missing, "Ready")["status"] == "False"  # type: ignore[index]
        assert "scaleTargetRef" not in (missing["status"].get("components") or {}).get("engine", {})
        await client.get(resources.SERVICES, "fronted-engine", namespace)  # still there

        async def warned() -> bool:
            events, _ = await client.list(resources.EVENTS, namespace)
            return any(
                e["reason"] == "ReplicaRefMissing"
                and e["type"] == "Warning"
                and e["involvedObject"]["name"] == "fronted"
                for e in events
            )

        await eventually(warned, timeout=30)

        # It comes back: the replica watch brings the service back without touching the service.
        async def recreate() -> bool:
            try:
                await client.create(resources.INFERENCE_REPLICAS, standalone_replica(), namespace)
            except (errors.AlreadyExists, errors.Conflict):  # the old one is still tearing down
                return False
            return True

        await eventually(recreate, timeout=120, interval=1.0)
        await eventually(ready, timeout=120)


async def test_service_created_before_its_replica_catches_up(client: Client, namespace: str) -> None:
    async with both_controllers(client):
        await client.create(resources.INFERENCE_SERVICES, fronting_service("early", "later"), namespace)
        await eventually(lambda: engine_ready(client, namespace, "early", "ReplicaRefMissing"), timeout=60)
        with pytest.raises(errors.NotFound):
            await client.get(resources.SERVICES, "early-engine", namespace)

        await client.create(resources.INFERENCE_REPLICAS, standalone_replica("later"), namespace)
        await eventually(lambda: engine_ready(client, namespace, "early", "Ready"), timeout=120)
        stable = await client.get(resources.SERVICES, "early-engine", namespace)
        assert stable["spec"]["selector"]["ome.io/inferenceservice"] == "later"
