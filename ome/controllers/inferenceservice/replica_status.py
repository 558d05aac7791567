"""What an InferenceService reports for a component run by an InferenceReplica (pure).

Both an OMENative component's own replica and a replica named in spec.replicaRefs are mirrored the same
way: `status.components.<c>.lifecycle` carries the replica's revisions and Instance counts as the replica
reports them, `scaleTargetRef` names the replica, and the component's ready condition follows the counts
with the four reasons of the deployment-modes page (`Ready`, `MinimumAvailable`, `InsufficientAvailable`,
`NoReplicas`).

The minimum is the replica's desired Instances (never more than it runs, so a surge cannot raise it) less
the maxUnavailable of its update strategy, rounded up for a percentage, or all of them when unset: the
same minimum the replica's own Ready condition uses.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any, Final

Obj = dict[str, Any]

LIFECYCLE_FIELDS: Final = (
    "currentRevision",
    "updateRevision",
    "collisionCount",
    "labelSelector",
    "replicas",
    "readyReplicas",
    "servingReplicas",
    "availableReplicas",
    "updatedReplicas",
    "updatedReadyReplicas",
    "conditions",
    "rolloutHold",
)
"""The LifecycleStatus fields copied from the replica's status. observedGeneration is left out: the
replica's generation is not the InferenceService's, and comparing the two would mislead."""

READY: Final = "Ready"
MINIMUM_AVAILABLE: Final = "MinimumAvailable"
INSUFFICIENT_AVAILABLE: Final = "InsufficientAvailable"
NO_REPLICAS: Final = "NoReplicas"


def lifecycle(replica: Mapping[str, Any]) -> Obj:
    """status.components.<c>.lifecycle: the replica's status fields that LifecycleStatus has."""
    status = replica.get("status") or {}
    return {key: copy.deepcopy(status[key]) for key in LIFECYCLE_FIELDS if status.get(key) is not None}


def scale_target_ref(replica_name: str) -> Obj:
    """The replica's scale subresource: what an external scaler of the component targets."""
    return {"apiVersion": "ome.io/v1beta1", "kind": "InferenceReplica", "name": replica_name}


def readiness(replica: Mapping[str, Any]) -> tuple[str, str, str]:
    """(status, reason, message) of the component's ready condition, from the replica's counts."""
    status = replica.get("status") or {}
    total = int(status.get("replicas") or 0)
    if total <= 0:
        return "False", NO_REPLICAS, "Component has no desired Instances"
    ready = int(status.get("readyReplicas") or 0)
    serving = int(status.get("servingReplicas") or 0)
    floor = minimum(replica, total)
    if ready >= total:
        return "True", READY, "All Instances are Ready"
    if serving >= floor:
        return "True", MINIMUM_AVAILABLE, f"{serving}/{total} Instances serving (min {floor})"
    return "False", INSUFFICIENT_AVAILABLE, f"{serving}/{total} Instances serving, need {floor}"


def minimum(replica: Mapping[str, Any], total: int) -> int:
    """Desired Instances (at most `total`, the Instances running) less the update budget."""
    spec = replica.get("spec") or {}
    desired = spec.get("replicas")
    basis = int(desired) if isinstance(desired, int) and 0 < desired < total else total
    budget = _max_unavailable(spec)
    if budget is None:
        return basis
    if isinstance(budget, str):
        text = budget.strip()
        budget = math.ceil(basis * int(text[:-1]) / 100) if text.endswith("%") else int(text)
    return max(basis - int(budget), 0)


def _max_unavailable(spec: Mapping[str, Any]) -> int | str | None:
    rolling = ((spec.get("lifecycle") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
    value = rolling.get("maxUnavailable")
    if value is None:
        value = (spec.get("pacing") or {}).get("maxUnavailable")
    return value if isinstance(value, int | str) else None
