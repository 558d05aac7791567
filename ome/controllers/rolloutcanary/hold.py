"""What the Instance rollout reads of a canary (cache reads only): a held group's way back, and which
replicas an InferenceService's canary status moves.

A rollback rejects the canary revision while the spec still asks for it. The replica's update revision
stays the rejected one; the hold is the canary status's `rolledBackRevisionHash` (as in v1.3), not a retry
block: `ome.io/release-held-revision` never retries a rejected revision, only a spec change that gives the
primary component another revision does. Until then Instances move toward the replica's `currentRevision`,
the revision that served before the canary, and Instances that start (a scale-up, a rebuild) start on it
(`start_hash`, `ome.omenative.held_revision`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from ome.api.resources import INFERENCE_SERVICES
from ome.framework.cache import NoInformerError, SharedCache
from ome.framework.reconcile import Request
from ome.omenative import canary_progression, canary_run, held_revision
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
    try:
        isvc = cache.get_or_none(INFERENCE_SERVICES, parent, replica["metadata"]["namespace"])
    except NoInformerError:  # a manager running the replica controllers alone: no canary to hold
        return None
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


def start_hash(
    cache: SharedCache, replica: Mapping[str, Any], update_hash: str, known: Collection[str]
) -> str:
    """The revision hash a newly started Instance of this replica runs: the update revision's, or the
    replica's `currentRevision` while the update revision is held, by a canary rollback or by retries."""
    status = replica.get("status") or {}
    update_revision = names.revision_name(names.base_name(replica), replica["spec"]["component"], update_hash)
    held = status.get("updateRevision") == update_revision  # a hold read from status is of that revision
    revert = revert_revision(cache, replica, known) if held else None
    return held_revision.start_hash(status, update_revision, known, canary_revert=revert)


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
