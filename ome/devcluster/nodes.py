"""Fake GPU nodes: pure builders of the Node objects kwok will run."""

from __future__ import annotations

from typing import Any

from ome.devcluster.components import KWOK_NODE_LABEL

GPU_PRODUCT = "NVIDIA-H100-80GB-HBM3"
INSTANCE_TYPE = "BM.GPU.H100.8"
ZONES = ("zone-a", "zone-b")
GPUS_PER_NODE = 8


def gpu_node(index: int) -> dict[str, Any]:
    name = f"gpu-node-{index}"
    resources = {
        "cpu": "128", "memory": "2Ti", "pods": "500", "ephemeral-storage": "10Ti",
        "nvidia.com/gpu": str(GPUS_PER_NODE),
    }
    key, value = KWOK_NODE_LABEL
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                key: value,
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "nvidia.com/gpu.product": GPU_PRODUCT,
                "nvidia.com/gpu.count": str(GPUS_PER_NODE),
                "node.kubernetes.io/instance-type": INSTANCE_TYPE,
                "topology.kubernetes.io/zone": ZONES[index % len(ZONES)],
            },
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {},
        "status": {"capacity": dict(resources), "allocatable": dict(resources)},
    }


def is_ready(node: dict[str, Any]) -> bool:
    conditions = node.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
