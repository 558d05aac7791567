"""What the rollout planner reads from an owned pod beyond `PodView` (pure)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ome.omenative.pods_view import PodView, parse_time, view
from ome.omenative.rollout_budget import deletion_grace_end


@dataclass(frozen=True, slots=True)
class RolloutPod:
    view: PodView
    created: datetime | None
    grace_ends: datetime | None
    """Terminating pods: when the deletion grace elapses."""
    waiting_reason: str | None
    """The first container's waiting reason (ImagePullBackOff, CreateContainerConfigError, ...)."""
    container: str | None
    unschedulable_since: datetime | None
    images: Mapping[str, str] = field(default_factory=dict)
    node_unknown: bool = False
    """Its node stopped reporting (Ready Unknown): a delete cannot finish until the node returns or the
    pod is force-deleted."""

    @property
    def name(self) -> str:
        return self.view.name

    @property
    def index(self) -> int:
        return self.view.index

    @property
    def ordinal(self) -> int:
        return int(self.name.rsplit("-", 1)[-1])


def node_unknown(node: Mapping[str, Any] | None) -> bool:
    """A node that stopped reporting: the node lifecycle controller set its Ready condition Unknown."""
    conditions = ((node or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "Unknown" for c in conditions)


def rollout_pod(pod: Mapping[str, Any], node: Mapping[str, Any] | None = None) -> RolloutPod | None:
    base = view(pod)
    if base is None:
        return None
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    waiting, container = None, None
    for cs in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
        reason = ((cs.get("state") or {}).get("waiting") or {}).get("reason")
        if reason and reason not in ("ContainerCreating", "PodInitializing"):
            waiting, container = reason, cs.get("name")
            break
    containers = (pod.get("spec") or {}).get("containers") or []
    return RolloutPod(
        view=base,
        created=parse_time(base.created),
        grace_ends=deletion_grace_end(meta),
        waiting_reason=waiting,
        container=container,
        unschedulable_since=parse_time(base.unschedulable_since),
        images={str(c.get("name")): str(c.get("image")) for c in containers},
        node_unknown=node_unknown(node),
    )


def serving_for(
    pods: Sequence[RolloutPod], min_ready_seconds: float, now: datetime, wake: Callable[[float], None]
) -> bool:
    """Every pod serves, each for minReadySeconds (else `wake` when the window ends); False for none."""
    remaining = 0.0
    for pod in pods:
        if not pod.view.serving:
            return False
        since = parse_time(pod.view.ready_since) or now
        remaining = max(remaining, min_ready_seconds - (now - since).total_seconds())
    if remaining > 0:
        wake(remaining)
        return False
    return bool(pods)
