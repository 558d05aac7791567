"""AcceleratorClass status: matching by labels and resources, and the status the reconciler writes.

Quoted from accelerator-classes.md, "How OME finds matching nodes": "A node matches a class when it has
all the labels in `discovery.nodeSelector`, with the same values. Since v1.3, the node's capacity must
also list all the resources in `resources`, above zero. A class that sets neither matches all nodes."
"""

from __future__ import annotations

import asyncio
from typing import Any

from ome.api import resources
from ome.api.resources import Resource
from ome.controllers.acceleratorclass import matching
from ome.controllers.acceleratorclass.reconciler import AcceleratorClassStatusReconciler
from ome.controllers.acceleratorclass.setup import _labels_or_capacity_changed, slim_node
from ome.framework.reconcile import Request

Obj = dict[str, Any]
H100 = "NVIDIA-H100-80GB-HBM3"


def node(name: str, product: str | None, gpus: str | None) -> Obj:
    labels = {"nvidia.com/gpu.product": product} if product else {}
    capacity = {"cpu": "64", "memory": "512Gi"} | ({"nvidia.com/gpu": gpus} if gpus is not None else {})
    return {"metadata": {"name": name, "labels": labels}, "status": {"capacity": capacity}}


def klass(name: str, product: str | None = None, resource: str | None = "nvidia.com/gpu",
          status: Obj | None = None) -> Obj:
    spec: Obj = {"discovery": {"nodeSelector": {"nvidia.com/gpu.product": product}} if product else {},
                 "capabilities": {}}
    if resource:
        spec["resources"] = [{"name": resource, "quantity": "8"}]
    return {"metadata": {"name": name}, "spec": spec, "status": status or {}}


# The docs' cluster: two H100 nodes, an L40S node whose device plugin reports no GPUs, a CPU node.
NODES = [node("cpu-1", None, None), node("gpu-h100-2", H100, "8"), node("gpu-h100-1", H100, "8"),
         node("gpu-l40s-1", "NVIDIA-L40S", None)]


def test_labels_and_resources_select_the_docs_nodes() -> None:
    assert matching.matching_nodes(klass("nvidia-h100", H100), NODES) == ["gpu-h100-1", "gpu-h100-2"]
    # "A node has the PRODUCT, but its GPUS is <none> or 0, as for gpu-l40s-1": not counted.
    assert matching.matching_nodes(klass("nvidia-l40s", "NVIDIA-L40S"), NODES) == []
    zero = node("gpu-l40s-1", "NVIDIA-L40S", "0")
    assert matching.matching_nodes(klass("nvidia-l40s", "NVIDIA-L40S"), [zero]) == []
    # "Once the device plugin reports the GPUs on gpu-l40s-1, the class counts it"
    fixed = node("gpu-l40s-1", "NVIDIA-L40S", "8")
    assert matching.matching_nodes(klass("nvidia-l40s", "NVIDIA-L40S"), [fixed]) == ["gpu-l40s-1"]


def test_values_must_match_exactly_and_a_bare_class_matches_all() -> None:
    assert matching.matching_nodes(klass("pcie", "NVIDIA-H100-PCIe"), NODES) == []
    assert len(matching.matching_nodes(klass("any", None, None), NODES)) == 4
    # Resources alone: every node with GPUs above zero, whatever its labels.
    assert matching.matching_nodes(klass("gpus", None), NODES) == ["gpu-h100-1", "gpu-h100-2"]


def test_quantity_and_affinity_play_no_part() -> None:
    one_gpu = node("small", H100, "1")  # "a node with one GPU matches a class whose quantity is 8"
    cls = klass("nvidia-h100", H100)
    cls["spec"]["discovery"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "x", "operator": "In", "values": ["y"]}]}]}}}
    assert matching.matching_nodes(cls, [one_gpu]) == ["small"]


def test_status_patch_only_on_change_and_blank_when_none() -> None:
    assert matching.status_patch({}, ["a", "b"], "T1") == {"nodes": ["a", "b"], "availableNodes": 2,
                                                           "lastUpdated": "T1"}
    assert matching.status_patch({"nodes": ["a", "b"], "availableNodes": 2, "lastUpdated": "T1"},
                                 ["a", "b"], "T2") is None
    # A class that never matched has nothing to write ("nvidia-l40s   <none>   <none>").
    assert matching.status_patch({}, [], "T1") is None
    assert matching.status_patch(None, [], "T1") is None
    # Losing its last node clears the list and count (null deletes in a merge patch) and dates it.
    assert matching.status_patch({"nodes": ["a"], "availableNodes": 1}, [], "T3") == {
        "nodes": None, "availableNodes": None, "lastUpdated": "T3"}


class FakeApi:
    def __init__(self, objects: list[Obj]) -> None:
        self.objects = {o["metadata"]["name"]: o for o in objects}
        self.patches: list[tuple[str, Obj, str | None]] = []

    def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None:
        assert res is resources.ACCELERATOR_CLASSES
        return self.objects.get(name)

    async def patch(self, res: Resource, name: str, patch: Obj, namespace: str | None = None, *,
                    subresource: str | None = None) -> Obj:
        self.patches.append((name, patch, subresource))
        status = self.objects[name].setdefault("status", {})
        for key, value in patch["status"].items():
            if value is None:
                status.pop(key, None)
            else:
                status[key] = value
        return self.objects[name]


def test_reconciler_writes_once_then_settles_and_follows_nodes() -> None:
    api = FakeApi([klass("nvidia-h100", H100), klass("nvidia-l40s", "NVIDIA-L40S")])
    nodes = list(NODES)
    now = ["2026-09-28T15:41:05Z"]
    rec = AcceleratorClassStatusReconciler(api, api, lambda: nodes, clock=lambda: now[0])

    async def run(name: str) -> None:
        await rec.reconcile(Request("", name))

    asyncio.run(run("nvidia-h100"))
    asyncio.run(run("nvidia-l40s"))
    assert api.patches == [("nvidia-h100", {"status": {"nodes": ["gpu-h100-1", "gpu-h100-2"], "availableNodes": 2,
                                                       "lastUpdated": "2026-09-28T15:41:05Z"}}, "status")]
    asyncio.run(run("nvidia-h100"))  # level-triggered: nothing new, no write
    assert len(api.patches) == 1
    now[0] = "2026-09-28T16:00:00Z"
    nodes[3] = node("gpu-l40s-1", "NVIDIA-L40S", "8")
    asyncio.run(run("nvidia-l40s"))
    assert api.objects["nvidia-l40s"]["status"] == {"nodes": ["gpu-l40s-1"], "availableNodes": 1,
                                                    "lastUpdated": "2026-09-28T16:00:00Z"}
    asyncio.run(run("missing"))  # a deleted class: nothing to do
    assert len(api.patches) == 2


def test_node_events_count_only_label_or_capacity_changes() -> None:
    full: Obj = {"metadata": {"name": "n", "labels": {"a": "1"}, "resourceVersion": "1", "annotations": {"x": "y"}},
            "status": {"capacity": {"nvidia.com/gpu": "8"}, "conditions": [{"type": "Ready"}]}}
    slim = slim_node(full)
    assert slim == {"metadata": {"name": "n", "labels": {"a": "1"}, "resourceVersion": "1"},
                    "status": {"capacity": {"nvidia.com/gpu": "8"}, "conditions": [{"type": "Ready"}]}}
    heartbeat = slim_node({**full, "metadata": {**full["metadata"], "resourceVersion": "2"}})
    assert not _labels_or_capacity_changed("MODIFIED", heartbeat, slim)
    relabelled = slim_node({**full, "metadata": {**full["metadata"], "labels": {"a": "2"}}})
    assert _labels_or_capacity_changed("MODIFIED", relabelled, slim)
    assert _labels_or_capacity_changed("ADDED", slim, None)
