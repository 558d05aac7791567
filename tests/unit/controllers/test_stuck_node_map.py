"""A Node event requeues the replicas with pods on that node, read from the pod cache the migration
controllers wire (`ome.io/managed-by=OMENative`): a list with no selector is one that cache cannot answer
(it would raise PartialListError on every node event)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio.client import Configuration

from ome.api import resources
from ome.controllers.migration import setup as migration_setup
from ome.controllers.migration.stuck import replicas_on_node, services_on_node
from ome.framework import transforms
from ome.framework.cache import SharedCache
from ome.framework.client import Client
from ome.framework.reconcile import Request
from ome.omenative import instance_names as names

Obj = dict[str, Any]


def pod(name: str, node: str, replica: str | None, labels: dict[str, str]) -> Obj:
    owners = [{"apiVersion": "ome.io/v1beta1", "kind": "InferenceReplica", "name": replica, "uid": f"u-{replica}",
               "controller": True}] if replica else []
    return {"apiVersion": "v1", "kind": "Pod", "spec": {"nodeName": node}, "status": {},
            "metadata": {"name": name, "namespace": "demo", "labels": labels, "ownerReferences": owners,
                         "resourceVersion": "1"}}


@pytest.fixture
async def cache() -> AsyncIterator[SharedCache]:
    async with Client.from_configuration(Configuration(host="http://127.0.0.1:9")) as client:
        shared = SharedCache(client)
        informer = shared.informer_for(resources.PODS, label_selector=migration_setup.CHILD_SELECTOR,
                                       transform=transforms.slim_pod)
        managed = {names.MANAGED_BY_LABEL: names.MANAGED_BY}
        chat, code = {**managed, names.ISVC_LABEL: "chat-isvc"}, {**managed, names.ISVC_LABEL: "code-isvc"}
        informer.replace([pod("chat-0", "gpu-1", "chat", chat), pod("chat-1", "gpu-2", "chat", chat),
                          pod("code-0", "gpu-1", "code", code), pod("loose", "gpu-3", None, managed)], "1")
        yield shared


async def test_a_node_maps_to_the_replicas_with_pods_on_it(cache: SharedCache) -> None:
    mapper = replicas_on_node(cache)
    assert list(mapper({"metadata": {"name": "gpu-1"}})) == [Request("demo", "chat"), Request("demo", "code")]
    assert list(mapper({"metadata": {"name": "gpu-2"}})) == [Request("demo", "chat")]
    assert list(mapper({"metadata": {"name": "gpu-9"}})) == []


async def test_a_node_maps_to_the_inference_services_with_pods_on_it(cache: SharedCache) -> None:
    """The migration controller's key: a deleted or NotReady node is relocation's cue."""
    mapper = services_on_node(cache)
    assert list(mapper({"metadata": {"name": "gpu-1"}})) == [Request("demo", "chat-isvc"), Request("demo", "code-isvc")]
    assert list(mapper({"metadata": {"name": "gpu-2"}})) == [Request("demo", "chat-isvc")]
    assert list(mapper({"metadata": {"name": "gpu-3"}})) == []  # a pod with no InferenceService label
