"""Read what coordination needs from the shared cache: the grouped components' InferenceReplicas.

Used by the rollout coordination controller (status) and by the Instance rollout reconciler, which asks
`limit_for_replica` before it starts moving an Instance, and by the pod renderers for the peer variables
(`peer_env_for`). Cache reads only: nothing here writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ome.api.resources import INFERENCE_REPLICAS, INFERENCE_SERVICES
from ome.framework.cache import NoInformerError, SharedCache
from ome.framework.reconcile import RetryError
from ome.omenative import coordination_pairing as pairing
from ome.omenative import coordination_plan as cplan
from ome.omenative import instance_names as names
from ome.omenative import revisions, rollout_budget
from ome.omenative.coordination_types import Limit, Member, member_of
from ome.omenative.rollout_budget import OperatorDefault

Obj = dict[str, Any]
COMPONENTS = ("engine", "decoder", "router")


def parent_of(cache: SharedCache, replica: Mapping[str, Any]) -> Obj | None:
    parent = ((replica.get("spec") or {}).get("parentRef") or {}).get("name")
    if not parent:
        return None
    try:
        return cache.get_or_none(INFERENCE_SERVICES, parent, replica["metadata"]["namespace"])
    except NoInformerError:
        return None  # a manager without the InferenceService controller: standalone replicas only


def replica_of(cache: SharedCache, isvc: Mapping[str, Any], component: str) -> Obj | None:
    meta = isvc["metadata"]
    name = names.component_name(meta["name"], component)
    return cache.get_or_none(INFERENCE_REPLICAS, name, meta["namespace"])


def members(
    cache: SharedCache, isvc: Mapping[str, Any], defaults: Mapping[str, OperatorDefault],
    planned: Mapping[str, Any] | None = None,
) -> dict[str, Member]:
    """The grouped components as members; `planned` (a replica a pass plans from, which may be newer
    than its cached copy: the rollout's own last write) stands for its component."""
    out: dict[str, Member] = {}
    generation = (isvc.get("metadata") or {}).get("generation")
    own = ((planned or {}).get("spec") or {}).get("component")
    for component in sorted(cplan.grouped_components(isvc)):
        replica = planned if component == own else replica_of(cache, isvc, component)
        spec = (replica or {}).get("spec") or {}
        strategy = rollout_budget.effective(
            spec.get("lifecycle") or {}, defaults.get(component), spec.get("pacing") or {}
        )
        out[component] = member_of(component, replica, generation, strategy.type, spec.get("pairingProtocol"),
                                   strategy.partition)
    return out


def plan_for(
    cache: SharedCache, isvc: Mapping[str, Any], defaults: Mapping[str, OperatorDefault], now: datetime,
    tolerance: int, planned: Mapping[str, Any] | None = None,
) -> cplan.CoordinationPlan:
    return cplan.plan(isvc, members(cache, isvc, defaults, planned), now, tolerance)


def limit_for_replica(
    cache: SharedCache, replica: Mapping[str, Any], defaults: Mapping[str, OperatorDefault], now: datetime,
    tolerance: int,
) -> tuple[Limit | None, float | None]:
    """The coordinator's limit on this replica's rollout now (None: not in a coordinated group), and
    when to look again (a soak ending). The plan sees `replica` as given, not its cached copy: a rollout
    planning from its newer write while the cache still shows the service and its peers settled on the
    old revision would otherwise find no member rolling and no limit, and start ahead of its peers."""
    isvc = parent_of(cache, replica)
    component = (replica.get("spec") or {}).get("component")
    if isvc is None or component not in cplan.grouped_components(isvc):
        return None, None
    found = plan_for(cache, isvc, defaults, now, tolerance, replica)
    return found.limits.get(str(component)), found.wake_after


def siblings(cache: SharedCache, replica: Mapping[str, Any]) -> list[str]:
    """Names of the other replicas of the same service's rollout groups (whose limits this one moves)."""
    isvc = parent_of(cache, replica)
    if isvc is None:
        return []
    component = (replica.get("spec") or {}).get("component")
    grouped = cplan.grouped_components(isvc)
    if component not in grouped:
        return []
    return [names.component_name(isvc["metadata"]["name"], c) for c in sorted(grouped) if c != component]


def peer_env_for(cache: SharedCache, replica: Mapping[str, Any], pod_revision: str) -> list[tuple[str, str]]:
    """OME_<PEER>_ENDPOINT and OME_<PEER>_REVISION_ENDPOINT for a pod of `replica` on `pod_revision`;
    none unless its InferenceService declares rollout groups."""
    isvc = parent_of(cache, replica)
    if isvc is None or not ((isvc.get("spec") or {}).get("rollout") or {}).get("groups"):
        return []
    spec = isvc.get("spec") or {}
    component = (replica.get("spec") or {}).get("component")
    peers = [c for c in COMPONENTS if c != component and spec.get(c) is not None]
    found: dict[str, tuple[str, str]] = {}
    grouped = cplan.grouped_components(isvc)
    for peer in peers:
        other = replica_of(cache, isvc, peer)
        if other is not None and (target := spec_hash(other)):
            current = ((other.get("status") or {}).get("currentRevision")) or ""
            found[peer] = (target, names.hash_of_revision(current) if current else "")
        elif peer in grouped and component in grouped:
            # A grouped peer is OMENative, so its replica is coming (the projection writes them one after
            # another): a pod made now would pair with no revision for its whole life.
            raise PeerNotReady(f"waiting for the {peer} InferenceReplica before rendering {component} pods")
    own_target = spec_hash(replica)
    meta = isvc["metadata"]
    return pairing.peer_env(meta["name"], meta["namespace"], peers, found, own_target, pod_revision)


class PeerNotReady(RetryError):
    """A grouped peer's InferenceReplica is not in the cache yet: render this component's pods later."""


def spec_hash(replica: Mapping[str, Any]) -> str:
    """The revision hash the replica's spec asks for: what its controller records as its update revision,
    known before it does (a pod made first still pairs with the right peer revision)."""
    data = revisions.from_replica(replica)
    return revisions.revision_hash(data, revisions.collision_count(replica)) if data is not None else ""
