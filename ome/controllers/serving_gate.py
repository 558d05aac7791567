"""The serving readiness gate on an Instance pod: the kubelet (kwok here) folds it into the pod's Ready,
so opening or closing it puts the pod in or out of rotation. Written by both the InferenceReplica and the
Instance rollout reconcilers."""

from __future__ import annotations

from datetime import datetime

from ome.api.resources import PODS
from ome.framework import errors
from ome.framework.client import Client
from ome.omenative import instance_names as names
from ome.omenative.pods_view import format_time


async def set_serving_gate(client: Client, namespace: str, name: str, value: str, now: datetime) -> bool:
    """Sets the gate to `value` ("True" or "False"); False when the pod is already gone."""
    condition = {
        "type": names.SERVING_GATE,
        "status": value,
        "lastTransitionTime": format_time(now),
        "reason": "InRotation" if value == "True" else "Drained",
    }
    try:
        await client.patch(PODS, name, {"status": {"conditions": [condition]}}, namespace,
                           patch_type="strategic", subresource="status")
    except errors.NotFound:
        return False
    return True
