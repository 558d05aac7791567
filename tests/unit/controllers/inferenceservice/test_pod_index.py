"""The InferenceService reconciler reads a component's pods through the `ome.io/inferenceservice` index of
the pod cache the controller wires up: the same pods a label-selector read finds, without walking the
pods of the other services in the namespace."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio.client import Configuration

from ome.api import resources
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers.inferencereplica import setup as replica_setup
from ome.controllers.inferenceservice import controller as isvc_controller
from ome.controllers.inferenceservice import pod_index
from ome.controllers.inferenceservice.reconciler import InferenceServiceReconciler
from ome.framework import cache as cache_module
from ome.framework import transforms
from ome.framework.cache import SharedCache
from ome.framework.client import Client
from ome.framework.manager import Manager, ManagerOptions
from ome.resolution import naming, replica_refs
from tests.unit.controllers.inferenceservice.fakes import FakeRecorder, FakeWorld

Obj = dict[str, Any]


def pod(name: str, namespace: str, isvc: str, component: str, *, omenative: bool = False) -> Obj:
    labels = naming.selector_labels(isvc, component)
    if omenative:  # an Instance's pod: the OMENative controllers' label too
        labels[naming.MANAGED_BY_LABEL] = replica_refs.MANAGED_BY
    return {"apiVersion": "v1", "kind": "Pod", "spec": {},
            "metadata": {"name": name, "namespace": namespace, "labels": labels, "resourceVersion": "1"}}


def isvc(name: str, namespace: str) -> Obj:
    return {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "spec": {},
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"}}


PODS = [pod("llama-engine-a", "demo", "llama", "engine"), pod("llama-engine-b", "demo", "llama", "engine"),
        pod("llama-decoder-a", "demo", "llama", "decoder"),
        pod("llama-engine-a", "prod", "llama", "engine")]  # same name, another namespace
PODS += [pod(f"other-{n}-engine", "demo", f"other-{n}", "engine") for n in range(50)]
OMENATIVE_PODS = [pod("omni-engine-0", "demo", "omni", "engine", omenative=True),
                  pod("omni-engine-1", "demo", "omni", "engine", omenative=True),
                  pod("omni-engine-0", "prod", "omni", "engine", omenative=True)]


@pytest.fixture
async def pods_cache() -> AsyncIterator[SharedCache]:
    """The manager's cache as the controllers wire it, its pod informers synced with three services' pods."""
    async with Client.from_configuration(Configuration(host="http://127.0.0.1:9")) as client:
        manager = Manager(client, ManagerOptions(metrics_bind_address="0", health_probe_bind_address="0",
                                                 install_signal_handlers=False))
        isvc_controller.add_to_manager(manager, InferenceServiceConfig())
        informer = manager.cache.informer_for(resources.PODS, label_selector=isvc_controller.NOT_OMENATIVE_SELECTOR,
                                              transform=transforms.slim_pod)
        informer.replace(PODS, "1")
        # The OMENative controllers' pod informer: the InferenceService controller files its pods too.
        replica_pods = manager.cache.informer_for(resources.PODS, label_selector=replica_setup.CHILD_SELECTOR,
                                                  transform=transforms.slim_pod)
        replica_pods.replace(OMENATIVE_PODS, "1")
        yield manager.cache


def _reconciler(reader: Any) -> InferenceServiceReconciler:
    world = FakeWorld()
    return InferenceServiceReconciler(reader=reader, writer=world, recorder=FakeRecorder(),  # type: ignore[arg-type]
                                      config=InferenceServiceConfig())


def _names(objs: list[Obj]) -> list[str]:
    return sorted(f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in objs)


@pytest.mark.parametrize(("service", "expected", "looked_at"), [
    ("llama", ["demo/llama-engine-a", "demo/llama-engine-b"], ["llama-decoder-a", "llama-engine-a", "llama-engine-b"]),
    ("omni", ["demo/omni-engine-0", "demo/omni-engine-1"], ["omni-engine-0", "omni-engine-1"]),
])
async def test_a_components_pods_are_read_through_the_service_index(
    pods_cache: SharedCache, monkeypatch: pytest.MonkeyPatch, service: str, expected: list[str], looked_at: list[str]
) -> None:
    walked: list[str] = []
    matches = cache_module.matches_labels

    def counting(obj: Obj, selector: Any) -> bool:
        walked.append(obj["metadata"]["name"])
        return matches(obj, selector)

    monkeypatch.setattr(cache_module, "matches_labels", counting)
    found = _reconciler(pods_cache)._owned.pods(isvc(service, "demo"), "engine")
    assert _names(found) == expected
    # Only the service's own pods in demo are looked at, not the 50 of the other services nor prod's,
    # whichever of the two pod informers holds them.
    assert sorted(walked) == looked_at


def test_pods_are_filed_under_namespace_and_service() -> None:
    assert pod_index.index_by_service(pod("p", "demo", "llama", "engine")) == ["demo/llama"]
    assert pod_index.index_by_service({"metadata": {"name": "p", "namespace": "demo", "labels": {}}}) == []


async def test_an_index_read_asks_only_the_informers_that_keep_the_index(pods_cache: SharedCache) -> None:
    unrelated = pods_cache.informer_for(resources.PODS, label_selector="app=unrelated")
    unrelated.replace([pod("llama-engine-c", "demo", "llama", "engine")], "1")  # no index: not asked
    with pytest.raises(KeyError, match="keeps the index 'nope'"):
        pods_cache.list(resources.PODS, "demo", index=("nope", "x"))
    found = pods_cache.list(resources.PODS, "demo", index=(pod_index.INDEX, pod_index.key("demo", "llama")))
    assert found.scope == tuple(sorted((isvc_controller.NOT_OMENATIVE_SELECTOR, "ome.io/managed-by=OMENative")))
    assert _names(found) == ["demo/llama-decoder-a", "demo/llama-engine-a", "demo/llama-engine-b"]
