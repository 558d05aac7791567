"""Instance rollout reconciler: moves existing Instances of an InferenceReplica onto its update revision.

Ownership boundary with the InferenceReplica reconciler (`ome.controllers.inferencereplica`), which
runs in the same manager on the same cache:

- The InferenceReplica reconciler owns the Instance *set*: it creates Instances (at the update revision)
  and deletes them for scale, runs Create / Restart / Delete operations, records ControllerRevisions
  and `status.updateRevision`, owns Services, PodGroups, the counts and the conditions.
- This reconciler owns the *move*: it starts and runs `Update` operations (rows in phase `Updating`,
  and the `Failed` rows an update left), writes `activeOrdinal`, `status.retryBlocks` and
  `status.rolloutHold`, answers `ome.io/release-held-revision`, and creates, patches or deletes pods
  only for Instances it moves. The InferenceReplica planner never acts on an `Updating` row, keeps
  this reconciler's status fields as they are, and ignores pods beyond an Instance's own (extra pods).

Both write the replica's status with its resourceVersion, so a stale write fails with 409 and the
loser requeues. The operation is recorded in status before the pod writes it leads to.

Beside this module: `rollout_inputs` (what the planner is given), `pod_writes` (the pod and PodGroup
writes), `recent_writes` (the memory that keeps a lagging cache from repeating them) and
`rollout_holds` (what held Instances back, remembered between passes).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import structlog

from ome.api.resources import INFERENCE_REPLICAS, INFERENCE_SERVICES, PODS
from ome.controllers import quota_view
from ome.controllers.inferencereplica import create_holds
from ome.controllers.inferencereplica.owned import owned_children
from ome.controllers.inferencereplica.pod_groups import PodGroups
from ome.controllers.instancerollout.pod_writes import RolloutPodWrites
from ome.controllers.instancerollout.recent_writes import RecentWrites
from ome.controllers.instancerollout.rollout_holds import RolloutHolds
from ome.controllers.instancerollout.rollout_inputs import RolloutInputs
from ome.controllers.rolloutcanary import hold as canary_hold
from ome.framework import errors
from ome.framework.cache import SharedCache
from ome.framework.client import Client
from ome.framework.events import EventRecorder
from ome.framework.reconcile import Request, Result
from ome.framework.written import CACHE_LAG_REQUEUE, WrittenVersions
from ome.omenative import instance_names as names
from ome.omenative import rollout_plan, rollout_types, status, teardown
from ome.omenative.revisions import RevisionData
from ome.omenative.rollout_pods import rollout_pod
from ome.omenative.rollout_retry import RELEASE_ANNOTATION
from ome.omenative.rollout_settings import RolloutSettings

Obj = dict[str, Any]
log = structlog.get_logger("ome.controllers.instancerollout")

_CONFLICT_RETRIES = 2


class InstanceRolloutReconciler:
    def __init__(
        self,
        client: Client,
        cache: SharedCache,
        settings: RolloutSettings,
        *,
        recorder: EventRecorder | None = None,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self._client = client
        self._written: WrittenVersions = getattr(client, "written", None) or WrittenVersions()
        self._written.track(INFERENCE_REPLICAS)
        self._cache = cache
        self._settings = settings
        self._recorder = recorder
        self._now = now or (lambda: datetime.now(UTC).replace(microsecond=0))
        self._recent = RecentWrites()
        self._holds = RolloutHolds()
        self._pod_groups = PodGroups(client)
        self._inputs = RolloutInputs(cache, settings, self._holds, self._now)
        self._pods = RolloutPodWrites(client, cache, settings, self._now, self._recent, self._holds,
                                      self._pod_groups)
        self._writes = 0
        """The status and annotation writes made here; the pod and PodGroup writes count in theirs."""

    @property
    def writes(self) -> int:
        """API writes made, for tests and benchmarks (a no-op reconcile adds none)."""
        return self._writes + self._pods.writes + self._pod_groups.writes

    async def reconcile(self, req: Request) -> Result:
        replica = self._cache.get_or_none(INFERENCE_REPLICAS, req.name, req.namespace)
        if replica is None or teardown.deleting(replica):
            self._holds.forget((req.namespace, req.name))
            return Result()
        # Planned and recorded under the replica's status lock, so the InferenceReplica reconciler's
        # status write of the same pod events cannot come between our read and our write (a 409, a GET
        # and a plan again, as often as pods change); the pod writes that follow the record run after.
        lock = self._written.lock(replica["metadata"]["uid"])
        # While the other reconciler writes, the pod writes of steps the status already records (a
        # gate to open, a drain) need not wait for it: they go out now; the pass under the lock
        # plans them again and skips them as made (`RecentWrites.skip`).
        ahead = self._recorded_steps_now(req) if lock.locked() else None
        try:
            async with lock:
                recorded = await self._record(req)
        except BaseException:
            if ahead is not None:
                ahead.cancel()
            raise
        ahead_failed = _error((await asyncio.gather(ahead, return_exceptions=True))[0]) if ahead else None
        if isinstance(recorded, Result):
            if ahead_failed is not None:
                raise ahead_failed
            return recorded
        written, plan, late, known, early = recorded
        # The lock is free for the other reconciler while the recorded steps' pod writes finish.
        early_outcome, late_outcome = await asyncio.gather(
            early, self._pods.act(written, late, known), return_exceptions=True
        )
        failed = ahead_failed or _error(early_outcome)
        late_failed = _error(late_outcome)
        if late_failed is not None and not quota_view.is_quota_refusal(late_failed):
            raise late_failed
        failed = failed or late_failed
        await self._pods.drop_pod_groups(written, plan.removed)
        if failed is not None and not self._quota_wait_recorded(written, failed):
            raise failed
        await self._announce(written, plan)
        if plan.release_answered:
            await self._drop_release_annotation(written)
        if plan.rows or plan.creates or plan.deletes:
            log.debug(
                "rollout pass",
                namespace=req.namespace,
                name=req.name,
                rows=sorted(plan.rows),
                creates=len(plan.creates),
                deletes=len(plan.deletes),
            )
        wake = plan.wake_after
        if failed is not None:
            # Only quota refusals, already shown as waiting QuotaExceeded: try again soon, not on the
            # growing error backoff (a quota change also brings a pass: see quota_view).
            wake = quota_view.QUOTA_RECHECK if wake is None else min(wake, quota_view.QUOTA_RECHECK)
        if self._holds.waits_on_groups((req.namespace, req.name)):  # no informer watches PodGroups
            wake = min(wake or create_holds.POD_GROUP_RECHECK, create_holds.POD_GROUP_RECHECK)
        if (memory := self._recent.ends(written)) is not None:
            wake = memory if wake is None else min(wake, memory)
        return Result(requeue_after=wake)

    def _recorded_steps_now(self, req: Request) -> asyncio.Future[None] | None:
        """The pod writes of steps the status already records, planned from what this process knows
        now and started at once; None when the cache lags a write of ours it has no answer of."""
        replica = self._cache.get_or_none(INFERENCE_REPLICAS, req.name, req.namespace)
        if replica is None or teardown.deleting(replica):
            return None
        newest = self._written.newest(replica)
        if newest is None and self._written.behind(replica):
            return None
        replica = dict(newest or replica)
        update = (replica.get("status") or {}).get("updateRevision")
        known = self._inputs.revisions(replica)
        if not update or names.hash_of_revision(update) not in known:
            return None
        update = canary_hold.revert_revision(self._cache, replica, known) or update
        raw = owned_children(self._cache, PODS, replica)
        pod_index = {p["metadata"]["name"]: v.index for p in raw if (v := rollout_pod(p)) is not None}
        inputs, coordinated = self._inputs.planned(replica, update, known, raw)
        plan = rollout_plan.plan(inputs)
        coordinated(plan)
        cached = {int(r["index"]): r for r in status.rows_of(replica.get("status") or {})}
        early, _ = rollout_types.split_recorded(plan, cached, pod_index)
        if not (early.creates or early.deletes or early.open_gates or early.close_gates
                or early.image_patches):
            return None
        return asyncio.ensure_future(self._pods.act(replica, early, known))

    async def _record(
        self, req: Request
    ) -> Result | tuple[Obj, rollout_types.Plan, rollout_types.Plan, dict[str, RevisionData],
                        asyncio.Future[None]]:
        """The pass up to its status write: the plan, the pod writes of steps the status already
        records (started with the status write), and the status write. Returns the replica as written,
        the plan, the pod writes left for after the write, the revisions and the recorded steps' pod
        writes, still running; or the pass's Result."""
        replica = self._cache.get_or_none(INFERENCE_REPLICAS, req.name, req.namespace)
        if replica is None or teardown.deleting(replica):
            return Result()
        # A status write of either reconciler made under the lock is planned on from its answer; any
        # other write of ours the cache does not show yet holds the pass until its watch event
        # (see ome/framework/written.py).
        newest = self._written.newest(replica)
        if newest is not None:
            replica = dict(newest)  # not `behind`: that would forget the write the cache lacks
        elif self._written.behind(replica):
            return Result(requeue_after=CACHE_LAG_REQUEUE)
        prev = replica.get("status") or {}
        update = prev.get("updateRevision")
        known = self._inputs.revisions(replica)
        if not update or names.hash_of_revision(update) not in known:
            return Result()  # the InferenceReplica controller records the revision first
        update = canary_hold.revert_revision(self._cache, replica, known) or update  # a rolled-back canary
        raw = owned_children(self._cache, PODS, replica)
        self._recent.forget_observed(raw)
        pod_index = {p["metadata"]["name"]: v.index for p in raw if (v := rollout_pod(p)) is not None}
        failed: BaseException | None = None
        for attempt in range(_CONFLICT_RETRIES + 1):
            inputs, coordinated = self._inputs.planned(replica, update, known, raw)
            plan = rollout_plan.plan(inputs)
            coordinated(plan)
            cached = {int(r["index"]): r for r in status.rows_of(replica.get("status") or {})}
            early, late = rollout_types.split_recorded(plan, cached, pod_index)
            # Steps the cached status already records go out with the status write, not after it.
            acting = asyncio.ensure_future(self._pods.act(replica, early, known))
            try:
                [outcome] = await asyncio.gather(self._write_status(replica, plan), return_exceptions=True)
            except BaseException:  # this pass is cancelled: so are its pod writes
                acting.cancel()
                raise
            if not isinstance(outcome, BaseException):
                return outcome, plan, late, known, _joined(acting, failed)
            [acted] = await asyncio.gather(acting, return_exceptions=True)
            failed = failed or _error(acted)
            if not isinstance(outcome, errors.Conflict) or attempt == _CONFLICT_RETRIES:
                raise outcome
            # Someone outside this process wrote first: plan again on its write, now rather than after
            # the work queue's backoff (only steps already recorded touched pods).
            replica = await self._client.get(INFERENCE_REPLICAS, req.name, req.namespace)
            moved_on = (replica.get("status") or {}).get("updateRevision") != update
            if teardown.deleting(replica) or moved_on:
                if failed is not None:
                    raise failed
                return Result()  # the change that raced us triggers its own pass
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _quota_wait_recorded(self, replica: Mapping[str, Any], failed: BaseException) -> bool:
        """Whether the pass failed only on quota refusals that the written status already shows as
        `waiting: QuotaExceeded`. A first refusal is raised instead, so the work queue's first, short
        backoff brings the pass that records the wait."""
        if not quota_view.is_quota_refusal(failed):
            return False
        meta = replica["metadata"]
        refused = self._holds.quota_refusals((meta["namespace"], meta["name"]))
        shown = {int(r["index"]) for r in status.rows_of(replica.get("status") or {})
                 if (r.get("operation") or {}).get("waiting") == quota_view.QUOTA_EXCEEDED}
        return bool(refused) and refused <= shown

    # -- status -------------------------------------------------------------------------------

    async def _write_status(self, replica: Obj, plan: rollout_types.Plan) -> Obj:
        """The new rows, retry blocks and hold; the replica as written (or as cached when unchanged)."""
        prev = replica.get("status") or {}
        rows = {int(r["index"]): r for r in status.rows_of(prev)}
        rows.update(plan.rows)
        for index in plan.removed:
            rows.pop(index, None)
        new = {
            k: v
            for k, v in prev.items()
            if k
            not in (
                "instanceStatuses",
                "instanceStatusColumns",
                "instanceStatusEncoding",
                "retryBlocks",
                "rolloutHold",
            )
        }
        columnar = self._settings.columnar or prev.get("instanceStatusEncoding") == "ColumnarV2"
        new.update(status.instance_rows(list(rows.values()), columnar, self._settings.max_decoded_instances))
        if plan.retry_blocks:
            new["retryBlocks"] = plan.retry_blocks
        if plan.rollout_hold is not None:
            new["rolloutHold"] = plan.rollout_hold
        if new == prev:
            return replica
        updated = await self._client.update_status(INFERENCE_REPLICAS, {**replica, "status": new})
        self._writes += 1
        return updated

    # -- events and annotations -----------------------------------------------------------------

    async def _announce(self, replica: Obj, plan: rollout_types.Plan) -> None:
        if self._recorder is None or not plan.events:
            return
        target = await self._event_target(replica)
        for type_, reason, message in plan.events:
            self._recorder.event(target, "Warning" if type_ == "Warning" else "Normal", reason, message)
        key = (replica["metadata"]["namespace"], replica["metadata"]["name"])
        if any(reason == "RetryHeld" for _, reason, _ in plan.events):
            self._holds.clear_rejected(key)

    async def _event_target(self, replica: Obj) -> Obj:
        """Events go on the InferenceService; a standalone replica (or a missing parent) gets them."""
        parent = ((replica.get("spec") or {}).get("parentRef") or {}).get("name")
        ns = replica["metadata"]["namespace"]
        if not parent:
            return replica
        found: Obj | None = None
        with contextlib.suppress(Exception):
            found = self._cache.get_or_none(INFERENCE_SERVICES, parent, ns)
        if found is None:
            with contextlib.suppress(errors.ApiError):
                found = await self._client.get(INFERENCE_SERVICES, parent, ns)
        return found or replica

    async def _drop_release_annotation(self, replica: Obj) -> None:
        meta = replica["metadata"]
        patch = {"metadata": {"annotations": {RELEASE_ANNOTATION: None}}}
        with contextlib.suppress(errors.NotFound):
            await self._client.patch(INFERENCE_REPLICAS, meta["name"], patch, meta["namespace"])
            self._writes += 1


def _error(outcome: object) -> BaseException | None:
    return outcome if isinstance(outcome, BaseException) else None


def _joined(acting: asyncio.Future[None], failed: BaseException | None) -> asyncio.Future[None]:
    """`acting`, failing with an earlier attempt's pod write failure when there was one."""
    if failed is None:
        return acting

    async def both() -> None:
        await asyncio.gather(acting, return_exceptions=True)
        raise failed

    return asyncio.ensure_future(both())
