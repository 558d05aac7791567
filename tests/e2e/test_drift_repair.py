"""Out-of-band edits of an InferenceService's children are repaired on the real control plane, and a
settled service makes no child write while kube-controller-manager keeps updating their status."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from ome.api import resources
from ome.controllers.inferenceservice import converge
from ome.framework import errors
from ome.framework.client import Client
from ome.framework.reconcile import Request
from tests.e2e.isvc_support import catalog, eventually, running_manager

Obj = dict[str, Any]


def isvc_body(name: str, spec: Obj) -> Obj:
    return {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": {"name": name},
            "spec": spec}


def child_writes(writes: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """Writes to children (the InferenceService's own status applies are left out)."""
    return [w for w in writes if w[1] != "InferenceService"]


async def get_or_none(client: Client, res: resources.Resource, name: str, namespace: str) -> Obj | None:
    with contextlib.suppress(errors.NotFound):
        return await client.get(res, name, namespace)
    return None


def image(obj: Obj) -> str:
    spec = obj["spec"]["template"]["spec"] if "template" in obj["spec"] else obj["spec"]["runners"][0]["template"]["spec"]
    return str(spec["containers"][0]["image"])


async def test_an_edited_deployment_image_is_reverted_and_an_idle_service_writes_nothing(
    client: Client, namespace: str, ome_crds: list[str]
) -> None:
    async with catalog(client, namespace) as cat, running_manager(client) as (ctrl, writer):
        name = "drift"
        spec = {"model": {"name": cat.model}, "runtime": {"name": cat.runtime}, "engine": {}}
        await client.create(resources.INFERENCE_SERVICES, isvc_body(name, spec), namespace)
        dep = await eventually(lambda: get_or_none(client, resources.DEPLOYMENTS, f"{name}-engine", namespace))
        wanted = image(dep)

        async def available() -> bool:
            obj = await client.get(resources.DEPLOYMENTS, f"{name}-engine", namespace)
            return bool((obj.get("status") or {}).get("availableReplicas"))

        await eventually(available, timeout=90)
        await asyncio.sleep(1.0)  # the last events reach the cache

        # Idle: kube-controller-manager rewrites the Deployment's status (a pod replaced), the
        # controller reconciles on each event and by hand, and writes no child.
        before = len(writer.writes)
        pods, _ = await client.list(resources.PODS, namespace, label_selector={"app": f"{name}-engine"})
        for pod in pods:
            await client.delete(resources.PODS, pod["metadata"]["name"], namespace, grace_period_seconds=0)
        await eventually(available, timeout=60)
        for _ in range(3):
            ctrl.queue.add(Request(namespace, name))
            await asyncio.sleep(0.5)
        assert child_writes(writer.writes[before:]) == []
        assert converge.TOLERATED.learned(namespace) == {}  # the apiserver kept every field as applied

        # kubectl edit: the image is changed under the controller; the next reconcile puts it back.
        await client.patch(
            resources.DEPLOYMENTS,
            f"{name}-engine",
            {"spec": {"template": {"spec": {"containers": [{"name": "ome-container", "image": "evil:1"}]}}}},
            namespace,
            patch_type="strategic",
        )

        async def reverted() -> bool:
            obj = await client.get(resources.DEPLOYMENTS, f"{name}-engine", namespace)
            return image(obj) == wanted

        await eventually(reverted, timeout=30)
        assert ("apply", "Deployment", f"{name}-engine") in writer.writes[before:]

        # The same for a Service's selector.
        await client.patch(resources.SERVICES, f"{name}-engine", {"spec": {"selector": {"app": "nothing"}}},
                           namespace)

        async def selector_back() -> bool:
            svc = await client.get(resources.SERVICES, f"{name}-engine", namespace)
            return svc["spec"]["selector"].get("app") == f"{name}-engine"

        await eventually(selector_back, timeout=30)


async def test_an_edited_inference_replica_is_reverted(
    client: Client, namespace: str, ome_crds: list[str]
) -> None:
    async with catalog(client, namespace) as cat, running_manager(client) as (ctrl, writer):
        spec = {
            "model": {"name": cat.model},
            "runtime": {"name": cat.runtime},
            "engine": {"annotations": {"ome.io/deploymentMode": "OMENative"}},
        }
        await client.create(resources.INFERENCE_SERVICES, isvc_body("native", spec), namespace)
        irep = await eventually(
            lambda: get_or_none(client, resources.INFERENCE_REPLICAS, "native-engine", namespace)
        )
        wanted = image(irep)
        await asyncio.sleep(1.0)
        before = len(writer.writes)
        runners = irep["spec"]["runners"]
        runners[0]["template"]["spec"]["containers"][0]["image"] = "evil:1"
        await client.patch(resources.INFERENCE_REPLICAS, "native-engine", {"spec": {"runners": runners}},
                           namespace)

        async def reverted() -> bool:
            obj = await client.get(resources.INFERENCE_REPLICAS, "native-engine", namespace)
            return image(obj) == wanted

        await eventually(reverted, timeout=30)
        assert ("apply", "InferenceReplica", "native-engine") in writer.writes[before:]
        await asyncio.sleep(1.0)
        settled = len(writer.writes)
        for _ in range(3):  # repaired and settled: the next reconciles write no child
            ctrl.queue.add(Request(namespace, "native"))
            await asyncio.sleep(0.5)
        assert child_writes(writer.writes[settled:]) == []
        assert converge.TOLERATED.learned(namespace) == {}
