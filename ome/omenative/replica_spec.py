"""What an InferenceReplica's spec asks of its Instances, read one way for both of its reconcilers
(`ome.controllers.inferencereplica` and `ome.controllers.instancerollout`).

Both read spec.replicas here: the Instances the replica controller keeps are the ones the rollout resolves
its budget against and renders pods for (a projected replica at 0 keeps, and rolls, one Instance).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ome.config.durations import parse_duration


def desired_replicas(replica: Mapping[str, Any]) -> int:
    """spec.replicas; unset means 1, and no replica scales to zero: an OMENative component keeps at
    least one Instance (the autoscaler controller then sets a projected replica's count back to its
    minReplicas)."""
    spec = replica.get("spec") or {}
    value = spec.get("replicas")
    if value is None:
        return 1
    return max(int(value), 1)


def min_ready_seconds(replica: Mapping[str, Any]) -> int:
    """spec.minReadySeconds, the window in effect (lifecycle.minReadySeconds for older writers)."""
    spec = replica.get("spec") or {}
    value = spec.get("minReadySeconds")
    if value is None:
        value = (spec.get("lifecycle") or {}).get("minReadySeconds")
    return int(value or 0)


def instance_ready_timeout(replica: Mapping[str, Any], default: float | None) -> float | None:
    """The component's lifecycle.instanceReadyTimeout, else the operator's `default`; a zero ("0s")
    counts as unset in either."""
    lifecycle = (replica.get("spec") or {}).get("lifecycle") or {}
    own = parse_duration(lifecycle.get("instanceReadyTimeout"))
    return own if own else (default or None)
