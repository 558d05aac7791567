"""The autoscaler's status entries as handed to the InferenceService controller (entries.py): what queues
its key, what a deleted service leaves behind, and a wiring that would leave the entries unwritten."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio.client import Configuration

from ome.api import resources as r
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers.autoscaler import controller as autoscaler_controller
from ome.controllers.autoscaler import entries as scaler_entries
from ome.controllers.autoscaler.entries import AutoscalerEntries
from ome.controllers.autoscaler.reconciler import Features
from ome.controllers.inferenceservice import controller as isvc_controller
from ome.framework.client import Client
from ome.framework.manager import Manager, ManagerOptions
from ome.framework.reconcile import Request
from tests.unit.autoscaler.test_reconciler import REQ, World, _put_isvc, _reconciler
from tests.unit.autoscaler.test_reconciler import resolvers as resolvers  # noqa: F401 - the autouse fixture

Obj = dict[str, Any]
HPA_ENTRY = {"engine": {"autoscaler": {"class": "HPA", "managedBy": "ome", "specSource": "default"}}}


def _isvc(components: Obj | None = None) -> Obj:
    return {"metadata": {"name": "llama", "namespace": "demo"},
            "status": {"components": components} if components is not None else {}}


def test_published_entries_queue_the_service_only_when_its_status_does_not_show_them() -> None:
    entries = AutoscalerEntries()
    queued: list[Request] = []
    entries.subscribe(queued.append)
    entries.publish(_isvc({"engine": {"url": "http://x", **HPA_ENTRY["engine"]}}), HPA_ENTRY)
    assert queued == []  # a new leader's first pass over a service whose status has them
    entries.publish(_isvc(), HPA_ENTRY)
    assert queued == [REQ]
    changed = {"engine": {"autoscaler": {**HPA_ENTRY["engine"]["autoscaler"], "currentReplicas": 2}}}
    entries.publish(_isvc(changed), HPA_ENTRY)  # a stale cache showing other entries than published last
    assert queued == [REQ, REQ]
    assert entries.published("demo", "llama") == HPA_ENTRY and entries.published("demo", "other") is None


def test_merge_replaces_carries_over_and_prunes() -> None:
    computed: Obj = {"observedGeneration": 1, "components": {"engine": {"url": "http://e"}}}
    old = {"components": {"engine": {"url": "http://e", "autoscaler": {"class": "KEDA"}},
                          "router": {"autoscaler": {"class": "HPA"}}}}
    kept = scaler_entries.merge(computed, old, None)  # nothing published: the status's entries stay
    assert kept["components"] == {"engine": {"url": "http://e", "autoscaler": {"class": "KEDA"}},
                                  "router": {"autoscaler": {"class": "HPA"}}}
    merged = scaler_entries.merge(computed, old, HPA_ENTRY)  # published: the router's entry goes
    assert merged["components"] == {"engine": {"url": "http://e", **HPA_ENTRY["engine"]}}
    assert "components" not in scaler_entries.merge({"observedGeneration": 1}, old, {})  # never `{}`


async def test_a_deleted_service_is_forgotten() -> None:
    world = World()
    _put_isvc(world)
    reconciler = _reconciler(world)
    await reconciler.reconcile(REQ)
    assert len(world.entries) == 1
    del world.objects[(r.INFERENCE_SERVICES.name, "demo", "llama")]
    await reconciler.reconcile(REQ)
    assert len(world.entries) == 0


async def test_the_autoscaler_needs_the_inferenceservice_controller_to_write_its_entries() -> None:
    async with Client.from_configuration(Configuration(host="http://127.0.0.1:9")) as client:
        manager = Manager(client, ManagerOptions(metrics_bind_address="0", health_probe_bind_address="0",
                                                 install_signal_handlers=False))
        config, features = InferenceServiceConfig(), Features(keda_served=False, policy_enabled=False)
        entries = AutoscalerEntries()
        with pytest.raises(ValueError, match="written by the InferenceService controller"):
            autoscaler_controller.add_to_manager(manager, config, features=features, entries=entries)
        isvc = isvc_controller.add_to_manager(manager, config, autoscaler_entries=entries)
        autoscaler_controller.add_to_manager(manager, config, features=features, entries=entries)
        entries.publish(_isvc(), HPA_ENTRY)
        assert len(isvc.queue) == 1  # published entries queue the InferenceService controller's key
