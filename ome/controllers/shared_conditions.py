"""An InferenceService's `status.conditions` has two writers; neither may put the other's back.

The CRD leaves the list atomic (no listType, as the Go types do), so a server-side apply replaces all
of it: the InferenceService controller and the rollout run controller (rolloutcanary) each send the
whole list, their own entries and the other's. Each takes the other's entries from one snapshot of the
service and applies with that snapshot's resourceVersion as a precondition: an entry the other wrote
after the snapshot makes the apiserver answer 409 instead of being reverted (a run closed as
`NoActiveRun` shown as `Pinned` again, or a fresh `Ready` put back to an old one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

Obj = dict[str, Any]

RUN_CONDITIONS: Final = frozenset({"RolloutPlanReady", "RolloutPlanDrift"})
"""The rollout run controller's entries; every other entry is the InferenceService controller's."""


def rebase(ours: Sequence[Mapping[str, Any]], snapshot: Sequence[Mapping[str, Any]], *,
           run_controller: bool) -> list[Obj]:
    """The list to apply: the writer's own entries from `ours`, the other writer's from `snapshot`,
    sorted by type as both write it."""
    def mine(cond: Mapping[str, Any]) -> bool:
        return (cond.get("type") in RUN_CONDITIONS) == run_controller

    merged = [dict(c) for c in ours if mine(c)] + [dict(c) for c in snapshot if not mine(c)]
    return sorted(merged, key=lambda c: str(c.get("type")))


def shared(isvc: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    """Whether the rollout run controller writes this service's conditions: it has rollout groups, or a
    run's entries or run are still in its status."""
    if ((isvc.get("spec") or {}).get("rollout") or {}).get("groups"):
        return True
    if (status.get("rollout") or {}).get("activeRun"):
        return True
    return any(c.get("type") in RUN_CONDITIONS for c in status.get("conditions") or [])


def precondition(body: Obj, resource_version: str | None) -> Obj:
    """`body` (an apply) with `metadata.resourceVersion` set, so the apiserver rejects it with 409 when
    the service changed since the snapshot it was built from."""
    if not resource_version:
        return body
    return {**body, "metadata": {**body["metadata"], "resourceVersion": resource_version}}
