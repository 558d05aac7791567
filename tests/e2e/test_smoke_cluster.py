"""The dev cluster behaves like a real one: CRDs, scheduling onto fake GPU nodes, watches, GC."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ome.framework import errors
from ome.framework.client import Client
from ome.framework.resources import CONFIGMAPS, CRDS, DEPLOYMENTS, PODS, Resource

WIDGETS = Resource(group="smoke.ome.io", version="v1", kind="Widget", plural="widgets", namespaced=True)


def _widget_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.smoke.ome.io"},
        "spec": {
            "group": "smoke.ome.io",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1", "served": True, "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}}}}}},
            }],
        },
    }


async def _eventually(check: Any, timeout: float = 30.0, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s (last: {last!r})")


async def test_crd_established_and_custom_object_round_trips(client: Client, namespace: str) -> None:
    try:
        await client.create(CRDS, _widget_crd())
    except errors.AlreadyExists:
        pass

    async def established() -> bool:
        crd = await client.get(CRDS, "widgets.smoke.ome.io")
        conds = (crd.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Established" and c["status"] == "True" for c in conds)

    await _eventually(established)
    spec = {"size": 3, "tags": ["a", "b"]}
    created = await _eventually(lambda: _try_create(client, namespace, spec), timeout=15)
    got = await client.get(WIDGETS, "w1", namespace)
    assert got["spec"] == spec
    assert got["metadata"]["uid"] == created["metadata"]["uid"]


async def _try_create(client: Client, namespace: str, spec: dict[str, Any]) -> dict[str, Any] | None:
    try:
        return await client.create(WIDGETS, {"apiVersion": "smoke.ome.io/v1", "kind": "Widget",
                                             "metadata": {"name": "w1"}, "spec": spec}, namespace)
    except errors.NotFound:  # discovery of a just-established CRD can lag a moment
        return None


def _gpu_deployment(name: str, gpus: int) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "main", "image": "example.invalid/llm:1",
                                     "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}}},
    }


async def _pods(client: Client, namespace: str, app: str) -> list[dict[str, Any]]:
    items, _ = await client.list(PODS, namespace, label_selector=f"app={app}")
    return items


async def test_gpu_pod_scheduled_running_ready_and_oversized_pod_pending(client: Client, namespace: str) -> None:
    await client.create(DEPLOYMENTS, _gpu_deployment("fits", 1), namespace)
    await client.create(DEPLOYMENTS, _gpu_deployment("too-big", 9), namespace)

    async def fits_ready() -> dict[str, Any] | None:
        for pod in await _pods(client, namespace, "fits"):
            conds = {c["type"]: c["status"] for c in (pod.get("status") or {}).get("conditions") or []}
            if pod["status"].get("phase") == "Running" and conds.get("Ready") == "True":
                return pod
        return None

    pod = await _eventually(fits_ready, timeout=60)
    assert pod["spec"]["nodeName"].startswith("gpu-node-")

    async def unschedulable() -> dict[str, Any] | None:
        for p in await _pods(client, namespace, "too-big"):
            for c in (p.get("status") or {}).get("conditions") or []:
                if c["type"] == "PodScheduled" and c["status"] == "False" and c.get("reason") == "Unschedulable":
                    return p
        return None

    big = await _eventually(unschedulable, timeout=60)
    assert big["status"]["phase"] == "Pending"
    assert "nvidia.com/gpu" in next(c["message"] for c in big["status"]["conditions"] if c["type"] == "PodScheduled")


async def test_watch_from_resource_version_sees_create_update_delete(client: Client, namespace: str) -> None:
    _, rv = await client.list(CONFIGMAPS, namespace)
    seen: list[tuple[str, str]] = []

    async def consume() -> None:
        async for etype, obj in client.watch(CONFIGMAPS, namespace, resource_version=rv, timeout_seconds=30):
            if etype == "BOOKMARK" or obj["metadata"]["name"] != "watched":
                continue  # kube-root-ca.crt may be published into the new namespace meanwhile
            seen.append((etype, obj["data"].get("v", "") if obj.get("data") else ""))
            if etype == "DELETED":
                return

    task = asyncio.create_task(consume())
    cm = await client.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                          "metadata": {"name": "watched"}, "data": {"v": "1"}}, namespace)
    cm["data"]["v"] = "2"
    await client.update(CONFIGMAPS, cm)
    await client.delete(CONFIGMAPS, "watched", namespace)
    await asyncio.wait_for(task, 30)
    assert seen == [("ADDED", "1"), ("MODIFIED", "2"), ("DELETED", "2")]


async def test_deleting_owner_garbage_collects_dependent(client: Client, namespace: str) -> None:
    owner = await client.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                             "metadata": {"name": "owner"}}, namespace)
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"],
           "controller": True, "blockOwnerDeletion": True}
    await client.create(CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": "dependent", "ownerReferences": [ref]}}, namespace)
    await client.delete(CONFIGMAPS, "owner", namespace, propagation_policy="Background")

    async def gone() -> bool:
        try:
            await client.get(CONFIGMAPS, "dependent", namespace)
            return False
        except errors.NotFound:
            return True

    await _eventually(gone, timeout=60)
