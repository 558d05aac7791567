"""What the Instance rollout reads of a canary (cache reads only): a held group's way back, and which
replicas an InferenceService's canary status moves.

A rollback rejects the canary revision while the spec still asks for it. The replica's update revision
stays the rejected one, and its retry block for that revision is held (`rollout_retry`); Instances move
toward the replica's `currentRevision` instead, the revision that served before the canary, until a change
gives the primary component a revision other than the rejected one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ome.api.resources import INFERENCE_SERVICES
from ome.framework.cache import SharedCache
from ome.framework.reconcile import Request
from ome.omenative import canary_progression, canary_run
from ome.omenative import instance_names as names
from ome.webhooks.canary_validation import progression_kind

Obj = dict[str, Any]


def _canary_group(isvc: Mapping[str, Any], component: str) -> list[str] | None:
    """The members of the canary group that holds `component` (pinned plan first, then the spec)."""
    active = ((isvc.get("status") or {}).get("rollout") or {}).get("activeRun") or {}
    pinned = [(e.get("group") or {}) for e in (active.get("plan") or {}).get("groups") or []]
    spec = list(((isvc.get("spec") or {}).get("rollout") or {}).get("groups") or [])
    for group in [*pinned, *spec]:
        members = list(group.get("components") or [])
        if component in members and progression_kind(group) == "canary":
            return members
    return None


def revert_revision(cache: SharedCache, replica: Mapping[str, Any], known: Iterable[str]) -> str | None:
    """The revision this replica's Instances move to instead of its update revision, or None."""
    parent = ((replica.get("spec") or {}).get("parentRef") or {}).get("name")
    component = (replica.get("spec") or {}).get("component")
    if not parent or not component:
        return None
    isvc = cache.get_or_none(INFERENCE_SERVICES, parent, replica["metadata"]["namespace"])
    members = _canary_group(isvc, str(component)) if isvc is not None else None
    if isvc is None or members is None:
        return None
    primary, canary, _ = canary_progression.canary_of(isvc, members)
    lead = replica if primary == component else _sibling(cache, replica, primary)
    update = ((lead or {}).get("status") or {}).get("updateRevision") or ""
    if not update or not canary_progression.held(canary, names.hash_of_revision(update)):
        return None
    status = replica.get("status") or {}
    current = status.get("currentRevision") or ""
    if not current or current == status.get("updateRevision"):
        return None
    return current if names.hash_of_revision(current) in set(known) else None


def _sibling(cache: SharedCache, replica: Mapping[str, Any], component: str) -> Obj | None:
    from ome.api.resources import INFERENCE_REPLICAS  # noqa: PLC0415 - keep the module's imports light

    base = names.base_name(replica)
    return cache.get_or_none(INFERENCE_REPLICAS, names.component_name(base, component),
                             replica["metadata"]["namespace"])


def replica_requests(isvc: Mapping[str, Any]) -> list[Request]:
    """The replicas of the service's rollout groups: a canary status write, or a park, changes what they
    may do."""
    meta = isvc.get("metadata") or {}
    status = isvc.get("status") or {}
    if not (status.get("rollout") or {}) and not any(
        (c or {}).get("canary") for c in (status.get("components") or {}).values()
    ):
        return []
    ns, name = str(meta.get("namespace")), str(meta.get("name"))
    groups = ((isvc.get("spec") or {}).get("rollout") or {}).get("groups") or []
    pinned = [{"components": group} for group in canary_run_groups(isvc)]
    members = canary_run.members_of([*groups, *pinned])
    return [Request(ns, names.component_name(name, c)) for c in members]


def canary_run_groups(isvc: Mapping[str, Any]) -> list[list[str]]:
    groups = list(((isvc.get("spec") or {}).get("rollout") or {}).get("groups") or [])
    active = ((isvc.get("status") or {}).get("rollout") or {}).get("activeRun") or {}
    pinned = [(e.get("group") or {}) for e in (active.get("plan") or {}).get("groups") or []]
    members = canary_run.members_of([g for g in [*groups, *pinned] if progression_kind(g) == "canary"])
    return [members] if members else []
