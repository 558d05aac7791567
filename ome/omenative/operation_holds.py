"""Holds on the InferenceReplica controller's own operations, `Create` and `Restart` (pure).

Something outside an Instance can hold the pods its operation must create; the docs (Instances,
Operations) name the holds in `operation.waiting`, stop the operation's clock while one lasts, and give
the operation a full window again once it ends. The rollout's `Update` has its own (`rollout_clock`).

States of a Create/Restart operation's `waiting`, set after each pass from what held its creates:

    (none) --a ResourceQuota refused (or slow start skipped after a refusal)--> QuotaExceeded
    (none) --its PodGroup from an earlier attempt is still being deleted--> PodGroupTerminating
    (none) --the scheduler cannot place one of its pods--> Unschedulable
    one hold --another hold--> that hold (a hold on its creates before Unschedulable)
    any hold --a pass that found none--> (none), deadline = now + timeout

While one holds, the deadline is not checked (`held`), so the Instance never fails for it. Unschedulable
still fails it past unschedulableGracePeriod (`instances.check_pods`): waiting for room doesn't count
against the deadline, as on the rollout's side (`rollout_clock`), but the grace bounds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, Final

from ome.omenative.pods_view import format_time

Row = dict[str, Any]
QUOTA_EXCEEDED: Final = "QuotaExceeded"
POD_GROUP_TERMINATING: Final = "PodGroupTerminating"
UNSCHEDULABLE: Final = "Unschedulable"
CREATE_HOLDS: Final = frozenset({QUOTA_EXCEEDED, POD_GROUP_TERMINATING})
"""Holds on the operation's pod creates: nothing of the attempt runs yet, so no pod can prove it fails."""
HOLDS: Final = CREATE_HOLDS | {UNSCHEDULABLE}
OWN_TYPES: Final = frozenset({"Create", "Restart"})


def held(row: Row) -> bool:
    """Whether the row's Create/Restart operation waits on a hold (its clock stopped)."""
    op = row.get("operation") or {}
    return op.get("type") in OWN_TYPES and op.get("waiting") in HOLDS


def creates_held(row: Row) -> bool:
    """Whether the row's Create/Restart operation waits on a hold on its pod creates."""
    op = row.get("operation") or {}
    return op.get("type") in OWN_TYPES and op.get("waiting") in CREATE_HOLDS


def settle(
    rows: Iterable[Row], holds: Mapping[int, str], now: datetime, ready_timeout: float | None
) -> list[Row]:
    """The rows with `operation.waiting` as this pass found it: `holds` maps an Instance index to the
    hold that kept its pods from being created. A hold that ended restarts the deadline in full."""
    out = []
    for row in rows:
        op = row.get("operation") or {}
        if op.get("type") not in OWN_TYPES:
            out.append(row)  # Update, Migrate and Delete are not this controller's to hold
            continue
        want, have = holds.get(int(row["index"])), op.get("waiting")
        if want is not None and want != have:
            row = {**row, "operation": {**op, "waiting": want}}
        elif want is None and have in HOLDS:
            op = {k: v for k, v in op.items() if k != "waiting"}
            if ready_timeout is not None:
                op["deadline"] = format_time(now + timedelta(seconds=ready_timeout))
            row = {**row, "operation": op}
        out.append(row)
    return out
