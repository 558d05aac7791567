"""AcceleratorClass status on the real control plane, against kwok's fake GPU nodes.

accelerator-classes.md, "How OME finds matching nodes": "A node matches a class when it has all the labels
in `discovery.nodeSelector`, with the same values. Since v1.3, the node's capacity must also list all the
resources in `resources`, above zero." and "NODES counts the nodes that match the class, and is blank when
none do". The controller runs in-process as ome-manager wires it; kubectl prints the NODES column.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ome.api import resources
from ome.controllers.acceleratorclass import setup as acceleratorclass
from ome.devcluster.nodes import GPU_PRODUCT
from ome.devcluster.paths import bin_dir
from ome.framework import errors
from ome.framework.client import Client
from tests.e2e.isvc_support import create_when_served, eventually, in_process_manager

Obj = dict[str, Any]
pytestmark = pytest.mark.usefixtures("ome_crds")
L40S = "NVIDIA-L40S"


def accelerator_class(name: str, product: str) -> Obj:
    return {"apiVersion": "ome.io/v1beta1", "kind": "AcceleratorClass", "metadata": {"name": name},
            "spec": {"vendor": "nvidia", "family": "ada", "discovery": {"nodeSelector": {
                "nvidia.com/gpu.product": product}}, "capabilities": {"memoryGB": "48Gi"},
                "resources": [{"name": "nvidia.com/gpu", "quantity": "8"}]}}


def kubectl_nodes_column(kubeconfig: Path, name: str) -> str:
    out = subprocess.run([str(bin_dir() / "kubectl"), "--kubeconfig", str(kubeconfig), "get",
                          "acceleratorclass", name, "--no-headers", "-o",
                          "custom-columns=NAME:.metadata.name,NODES:.status.availableNodes"],
                         check=True, capture_output=True, text=True, timeout=30).stdout
    return out.split()[1]


def printer_columns(kubeconfig: Path, name: str) -> dict[str, str]:
    out = subprocess.run([str(bin_dir() / "kubectl"), "--kubeconfig", str(kubeconfig), "get",
                          "acceleratorclass", name], check=True, capture_output=True, text=True,
                         timeout=30).stdout.splitlines()
    header, row = out[0], out[1]
    # Columns are left-aligned under their headers; a blank cell is spaces.
    starts = [header.index(h) for h in header.split()]
    cells = [row[s:e].strip() for s, e in zip(starts, [*starts[1:], len(row) + 1], strict=True)]
    return dict(zip(header.split(), cells, strict=True))


async def test_classes_list_their_matching_nodes(client: Client, namespace: str, kubeconfig: Path) -> None:
    suffix = namespace[-6:]
    h100, l40s, node_name = f"h100-{suffix}", f"l40s-{suffix}", f"l40s-node-{suffix}"
    all_nodes, _ = await client.list(resources.NODES)
    h100_nodes = sorted(n["metadata"]["name"] for n in all_nodes
                        if (n["metadata"].get("labels") or {}).get("nvidia.com/gpu.product") == GPU_PRODUCT)
    assert h100_nodes, "the dev cluster has kwok GPU nodes"
    manager = in_process_manager(client)
    acceleratorclass.add_to_manager(manager)
    task = asyncio.create_task(manager.run())
    try:
        await create_when_served(client, resources.ACCELERATOR_CLASSES, accelerator_class(h100, GPU_PRODUCT))
        await create_when_served(client, resources.ACCELERATOR_CLASSES, accelerator_class(l40s, L40S))

        async def h100_status() -> Obj:
            status = (await client.get(resources.ACCELERATOR_CLASSES, h100)).get("status") or {}
            return status if status.get("nodes") == h100_nodes else {}

        status = await eventually(h100_status, timeout=30)
        assert status["availableNodes"] == len(h100_nodes)
        assert status["lastUpdated"].endswith("Z")
        assert printer_columns(kubeconfig, h100)["NODES"] == str(len(h100_nodes))

        # An L40S node whose device plugin reports no GPUs: labels match, resources don't.
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node_name, "labels": {
            "type": "kwok", "nvidia.com/gpu.product": L40S, "kubernetes.io/hostname": node_name}},
            "spec": {"taints": [{"key": "ome.io/e2e-only", "effect": "NoSchedule"}]}}
        await client.create(resources.NODES, node)
        await client.patch(resources.NODES, node_name, {"status": {"capacity": {"cpu": "8", "memory": "64Gi"}}},
                           subresource="status")
        await asyncio.sleep(2)  # the controller has seen the node; the class must still be empty
        assert not ((await client.get(resources.ACCELERATOR_CLASSES, l40s)).get("status") or {}).get("nodes")
        assert printer_columns(kubeconfig, l40s)["NODES"] == ""  # blank when none match
        assert kubectl_nodes_column(kubeconfig, l40s) == "<none>"

        # "Once the device plugin reports the GPUs on gpu-l40s-1, the class counts it".
        await client.patch(resources.NODES, node_name, {"status": {"capacity": {"nvidia.com/gpu": "8"}}},
                           subresource="status")

        async def l40s_counted() -> bool:
            status = (await client.get(resources.ACCELERATOR_CLASSES, l40s)).get("status") or {}
            return status.get("nodes") == [node_name] and status.get("availableNodes") == 1

        await eventually(l40s_counted, timeout=30)
        assert printer_columns(kubeconfig, l40s)["NODES"] == "1"
        h100_before = (await client.get(resources.ACCELERATOR_CLASSES, h100))["metadata"]["resourceVersion"]

        # The node goes away: the class reports zero nodes again, blank column; the H100 class is untouched.
        await client.delete(resources.NODES, node_name)

        async def l40s_empty() -> bool:
            status = (await client.get(resources.ACCELERATOR_CLASSES, l40s)).get("status") or {}
            return "nodes" not in status and "availableNodes" not in status and bool(status.get("lastUpdated"))

        await eventually(l40s_empty, timeout=30)
        h100_after = (await client.get(resources.ACCELERATOR_CLASSES, h100))["metadata"]["resourceVersion"]
        assert h100_after == h100_before, "a node event that changes nothing for a class writes nothing"
    finally:
        manager.stop()
        await asyncio.wait_for(task, 30)
        for res, name in ((resources.NODES, node_name), (resources.ACCELERATOR_CLASSES, h100),
                          (resources.ACCELERATOR_CLASSES, l40s)):
            with contextlib.suppress(errors.NotFound):
                await client.delete(res, name)
