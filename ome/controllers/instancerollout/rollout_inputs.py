"""What the Instance rollout planner (`ome.omenative.rollout_plan`) is given: the replica's revisions,
pods (with their nodes), status rows, strategy and what holds Instances back, narrowed to what the
service's rollout groups allow now (`ome.controllers.rolloutcoordination`).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Final

from ome.controllers.inferencereplica.owned import owned_revisions
from ome.controllers.instancerollout.rollout_holds import RolloutHolds
from ome.controllers.rolloutcoordination import observe as coordination
from ome.framework.cache import NoInformerError, SharedCache
from ome.framework.resources import NODES
from ome.omenative import coordination_enforce, rollout_budget, rollout_types, status
from ome.omenative import instance_names as names
from ome.omenative.replica_spec import desired_replicas, instance_ready_timeout, min_ready_seconds
from ome.omenative.revisions import RevisionData
from ome.omenative.rollout_pods import rollout_pod
from ome.omenative.rollout_settings import RolloutSettings

Obj = dict[str, Any]

PAUSE_FREEZE: Final = "Freeze"


class RolloutInputs:
    def __init__(
        self,
        cache: SharedCache,
        settings: RolloutSettings,
        holds: RolloutHolds,
        now: Callable[[], datetime],
    ) -> None:
        self._cache = cache
        self._settings = settings
        self._holds = holds
        self._now = now

    def revisions(self, replica: Mapping[str, Any]) -> dict[str, RevisionData]:
        return owned_revisions(self._cache, replica)

    def planned(
        self, replica: Obj, update: str, known: Mapping[str, RevisionData], raw: list[Obj]
    ) -> tuple[rollout_types.Inputs, Callable[[rollout_types.Plan], None]]:
        """The planner's inputs from the replica at `update` and its pods `raw`, as the rollout groups
        allow them now, and what to do to the plan after (`_coordinate`)."""
        return self._coordinate(replica, self._build(replica, update, known, raw))

    def _build(
        self, replica: Obj, update: str, known: Mapping[str, RevisionData], raw: list[Obj]
    ) -> rollout_types.Inputs:
        meta, spec, prev = replica["metadata"], replica["spec"], replica.get("status") or {}
        lifecycle = spec.get("lifecycle") or {}
        strategy = rollout_budget.effective(
            lifecycle, self._settings.defaults.get(spec["component"]), spec.get("pacing") or {}
        )
        pods = [p for one in raw if (p := rollout_pod(one, self._node_of(one))) is not None]
        rows = status.rows_of(prev)
        # A hold matters while its Instance's Update runs (a gang surge's replacement is `Creating`).
        updating = {int(r["index"]) for r in rows if (r.get("operation") or {}).get("type") == "Update"}
        quota, groups = self._holds.narrowed((meta["namespace"], meta["name"]), updating)
        return rollout_types.Inputs(
            namespace=meta["namespace"],
            replica=meta["name"],
            base=names.base_name(replica),
            component=spec["component"],
            desired=desired_replicas(replica),
            update_revision=update,
            revisions=known,
            rows=rows,
            pods=pods,
            strategy=strategy,
            retry_blocks=list(prev.get("retryBlocks") or []),
            policy=self._settings.retry,
            now=self._now(),
            ready_timeout=instance_ready_timeout(replica, self._settings.instance_ready_timeout),
            unschedulable_grace=self._settings.unschedulable_grace,
            min_ready_seconds=min_ready_seconds(replica),
            paused=bool(spec.get("paused")),
            freeze=bool(spec.get("paused")) and spec.get("pauseMode") == PAUSE_FREEZE,
            stuck_grace=self._settings.stuck_grace,
            annotations=meta.get("annotations") or {},
            previous_hold=prev.get("rolloutHold"),
            rejected=self._holds.rejected((meta["namespace"], meta["name"])),
            quota_refused=quota,
            pod_group_terminating=groups,
        )

    def _node_of(self, pod: Obj) -> Obj | None:
        name = (pod.get("spec") or {}).get("nodeName")
        if not name:
            return None
        with contextlib.suppress(NoInformerError):  # a manager without the node informer: never Unknown
            return self._cache.get_or_none(NODES, name)
        return None

    def _coordinate(
        self, replica: Obj, inp: rollout_types.Inputs
    ) -> tuple[rollout_types.Inputs, Callable[[rollout_types.Plan], None]]:
        """The inputs narrowed to what the service's rollout groups allow now (rolloutcoordination),
        and what to do to the plan after: the group's hold when it held a start back, its wake."""
        limit, wake = coordination.limit_for_replica(
            self._cache, replica, self._settings.defaults, inp.now, self._settings.ratio_tolerance
        )
        strategy, held = coordination_enforce.constrain(
            inp.strategy, limit, inp.rows, inp.update_revision, inp.desired
        )

        def after(plan: rollout_types.Plan) -> None:
            other = (plan.rollout_hold or {}).get("gate")
            if held is not None and other not in ("RetryBlock", "Held"):
                plan.rollout_hold = coordination_enforce.hold(held, inp.previous_hold, inp.now,
                                                              inp.update_revision)
            plan.wake(wake)

        return dataclasses.replace(inp, strategy=strategy), after

