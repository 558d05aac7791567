"""The manager's informers, as `add_controllers` wires them, hold each Pod and Service once.

An OMENative Instance's pods and Services carry both the InferenceService label and the OMENative
controllers' `ome.io/managed-by` label. Two informers whose selectors both matched them decoded every
event of each twice and kept two copies (N=1000 OMENative: 1,000 pods and 3,000 Services cached twice).
Whichever informer holds a pod, the controllers that need it watch and index that one too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio.client import Configuration

from ome.api import resources
from ome.cmd import wiring
from ome.config.inferenceservice_config import InferenceServiceConfig
from ome.controllers.inferenceservice import pod_index
from ome.framework.client import Client
from ome.framework.manager import Manager, ManagerOptions
from ome.framework.resources import Resource
from ome.framework.store import OWNER_INDEX
from ome.omenative import instance_names as names
from ome.resolution import naming
from tests.unit.framework.fake_apiserver import label_matcher

Obj = dict[str, Any]

ISVC = {naming.ISVC_LABEL: "chat", naming.COMPONENT_LABEL: "engine"}
OMENATIVE = {**ISVC, names.MANAGED_BY_LABEL: names.MANAGED_BY}
STANDALONE = {names.MANAGED_BY_LABEL: names.MANAGED_BY}  # a replica no InferenceService owns


@pytest.fixture
async def manager() -> AsyncIterator[Manager]:
    async with Client.from_configuration(Configuration(host="http://127.0.0.1:9")) as client:
        wired = Manager(client, ManagerOptions(metrics_bind_address="0", health_probe_bind_address="0",
                                               install_signal_handlers=False))
        wiring.add_controllers(wired, wiring.Settings(InferenceServiceConfig(), lws_served=False,
                                                      config_namespace="ome", pod_monitor_served=False))
        yield wired


def holders(manager: Manager, res: Resource, labels: dict[str, str]) -> list[str]:
    obj = {"metadata": {"name": "x", "namespace": "demo", "labels": labels}}
    return [str(i.label_selector) for i in manager.cache.informers
            if i.resource == res and label_matcher(i.label_selector or "")(obj)]


@pytest.mark.parametrize("labels", [ISVC, OMENATIVE, STANDALONE], ids=["raw", "omenative", "standalone"])
@pytest.mark.parametrize("res", [resources.PODS, resources.SERVICES], ids=["pods", "services"])
async def test_each_pod_and_service_is_held_by_one_informer(
    manager: Manager, res: Resource, labels: dict[str, str]
) -> None:
    assert len(holders(manager, res, labels)) == 1, holders(manager, res, labels)


@pytest.mark.parametrize("labels", [ISVC, OMENATIVE], ids=["raw", "omenative"])
async def test_an_inferenceservices_pods_are_indexed_wherever_they_are(
    manager: Manager, labels: dict[str, str]
) -> None:
    [selector] = holders(manager, resources.PODS, labels)
    [informer] = [i for i in manager.cache.informers if i.resource == resources.PODS and i.label_selector == selector]
    assert {pod_index.INDEX, OWNER_INDEX} <= set(informer.store.indexers)


def test_the_inferenceservice_informer_tells_the_reconciler_which_status_writes_it_shows(manager: Manager) -> None:
    [controller] = [c for c in manager.controllers if c.name == "inferenceservice"]
    [informer] = [i for i in manager.cache.informers if i.resource == resources.INFERENCE_SERVICES]
    reconciler = controller._reconciler  # noqa: SLF001 - what the wiring handed the controller
    assert reconciler.forget_shown_status in informer._handlers  # noqa: SLF001
