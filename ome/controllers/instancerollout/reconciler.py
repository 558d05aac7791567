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
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import structlog

from ome.api.resources import CONTROLLER_REVISIONS, INFERENCE_REPLICAS, INFERENCE_SERVICES, PODS
from ome.config.durations import parse_duration
from ome.controllers import quota_view
from ome.controllers.inferencereplica import create_holds
from ome.controllers.inferencereplica.reconciler import PODGROUPS
from ome.controllers.rolloutcanary import hold as canary_hold
from ome.controllers.rolloutcoordination import observe as coordination
from ome.controllers.serving_gate import set_serving_gate
from ome.framework import errors
from ome.framework.cache import NoInformerError, SharedCache
from ome.framework.client import Client
from ome.framework.events import EventRecorder
from ome.framework.reconcile import Request, Result
from ome.framework.resources import NODES
from ome.framework.store import OWNER_INDEX
from ome.framework.written import CACHE_LAG_REQUEUE, WrittenVersions
from ome.omenative import (
    coordination_enforce,
    pod_render,
    revisions,
    rollout_budget,
    rollout_gang,
    rollout_inplace,
    rollout_plan,
    rollout_types,
    status,
    teardown,
)
from ome.omenative import instance_names as names
from ome.omenative.gang_timeout import schedule_timeout_seconds
from ome.omenative.revisions import RevisionData
from ome.omenative.rollout_pods import rollout_pod
from ome.omenative.rollout_retry import RELEASE_ANNOTATION
from ome.omenative.rollout_settings import RolloutSettings

Obj = dict[str, Any]
log = structlog.get_logger("ome.controllers.instancerollout")

PAUSE_FREEZE = "Freeze"
_CONFLICT_RETRIES = 2
_RECENT = 30.0
"""Seconds a pod write is remembered, so a pass on a cache that lags our writes does not repeat it."""


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
        self._recent: dict[tuple[str, str, str], float] = {}
        self._rejected: dict[tuple[str, str], dict[int, str]] = {}
        self._quota: dict[tuple[str, str], set[int]] = {}
        """Instances whose last pod create a ResourceQuota refused, by replica (`waiting: QuotaExceeded`)."""
        self._group_wait: dict[tuple[str, str], set[int]] = {}
        """Instances whose PodGroup name a PodGroup being deleted holds (`waiting: PodGroupTerminating`)."""
        self._gang: bool | None = None
        """Whether the PodGroup CRD is served (looked up once, when a gang's group is first needed)."""
        self.writes = 0
        """API writes made, for tests and benchmarks (a no-op reconcile adds none)."""

    async def reconcile(self, req: Request) -> Result:
        replica = self._cache.get_or_none(INFERENCE_REPLICAS, req.name, req.namespace)
        if replica is None or teardown.deleting(replica):
            self._rejected.pop((req.namespace, req.name), None)
            self._quota.pop((req.namespace, req.name), None)
            self._group_wait.pop((req.namespace, req.name), None)
            return Result()
        # Planned and recorded under the replica's status lock, so the InferenceReplica reconciler's
        # status write of the same pod events cannot come between our read and our write (a 409, a GET
        # and a plan again, as often as pods change); the pod writes that follow the record run after.
        lock = self._written.lock(replica["metadata"]["uid"])
        # While the other reconciler writes, the pod writes of steps the status already records (a
        # gate to open, a drain) need not wait for it: they go out now; the pass under the lock
        # plans them again and skips them as made (`_fresh`).
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
            early, self._act(written, late, known), return_exceptions=True
        )
        failed = ahead_failed or _error(early_outcome)
        late_failed = _error(late_outcome)
        if late_failed is not None and not quota_view.is_quota_refusal(late_failed):
            raise late_failed
        failed = failed or late_failed
        await self._drop_pod_groups(written, plan.removed)
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
        if self._group_wait.get((req.namespace, req.name)):  # no informer watches PodGroups
            wake = min(wake or create_holds.POD_GROUP_RECHECK, create_holds.POD_GROUP_RECHECK)
        if (memory := self._memory_ends(written)) is not None:
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
        known = self._revisions(replica)
        if not update or names.hash_of_revision(update) not in known:
            return None
        update = canary_hold.revert_revision(self._cache, replica, known) or update
        raw = self._owned(PODS, replica)
        pod_index = {p["metadata"]["name"]: v.index for p in raw if (v := rollout_pod(p)) is not None}
        inputs, coordinated = self._coordinate(replica, self._inputs(replica, update, known, raw))
        plan = rollout_plan.plan(inputs)
        coordinated(plan)
        cached = {int(r["index"]): r for r in status.rows_of(replica.get("status") or {})}
        early, _ = rollout_types.split_recorded(plan, cached, pod_index)
        if not (early.creates or early.deletes or early.open_gates or early.close_gates
                or early.image_patches):
            return None
        return asyncio.ensure_future(self._act(replica, early, known))

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
        known = self._revisions(replica)
        if not update or names.hash_of_revision(update) not in known:
            return Result()  # the InferenceReplica controller records the revision first
        update = canary_hold.revert_revision(self._cache, replica, known) or update  # a rolled-back canary
        raw = self._owned(PODS, replica)
        self._forget_observed(raw)
        pod_index = {p["metadata"]["name"]: v.index for p in raw if (v := rollout_pod(p)) is not None}
        failed: BaseException | None = None
        for attempt in range(_CONFLICT_RETRIES + 1):
            inputs, coordinated = self._coordinate(replica, self._inputs(replica, update, known, raw))
            plan = rollout_plan.plan(inputs)
            coordinated(plan)
            cached = {int(r["index"]): r for r in status.rows_of(replica.get("status") or {})}
            early, late = rollout_types.split_recorded(plan, cached, pod_index)
            # Steps the cached status already records go out with the status write, not after it.
            acting = asyncio.ensure_future(self._act(replica, early, known))
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
        refused = self._quota.get((meta["namespace"], meta["name"]), set())
        shown = {int(r["index"]) for r in status.rows_of(replica.get("status") or {})
                 if (r.get("operation") or {}).get("waiting") == quota_view.QUOTA_EXCEEDED}
        return bool(refused) and refused <= shown

    def _memory_ends(self, replica: Mapping[str, Any]) -> float | None:
        """Seconds until the first remembered write of this replica's pods is forgotten. A write skipped
        because of it (a pod deleted and made again under the same name looks like a delete the cache
        has not shown) is then made on a pass no event may bring, so the pass asks for one."""
        ns = replica["metadata"]["namespace"]
        prefix = names.component_name(names.base_name(replica), replica["spec"]["component"]) + "-"
        now = time.monotonic()
        left = [_RECENT - (now - at) for (_, key_ns, name), at in self._recent.items()
                if key_ns == ns and name.startswith(prefix)]
        return max(min(left), 0.1) if left else None

    # -- observe ------------------------------------------------------------------------------

    def _owned(self, res: Any, replica: Mapping[str, Any]) -> list[Obj]:
        meta = replica["metadata"]
        return self._cache.list(res, meta["namespace"], index=(OWNER_INDEX, meta["uid"]))

    def _revisions(self, replica: Mapping[str, Any]) -> dict[str, RevisionData]:
        return {
            (r["metadata"].get("labels") or {}).get(names.REVISION_HASH_LABEL, ""): revisions.from_json(
                r["data"]
            )
            for r in self._owned(CONTROLLER_REVISIONS, replica)
            if r.get("data")
        }

    def _inputs(
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
        quota = _narrow(self._quota, (meta["namespace"], meta["name"]), updating)
        groups = _narrow(self._group_wait, (meta["namespace"], meta["name"]), updating)
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
            ready_timeout=self._ready_timeout(replica),
            unschedulable_grace=self._settings.unschedulable_grace,
            min_ready_seconds=min_ready_seconds(replica),
            paused=bool(spec.get("paused")),
            freeze=bool(spec.get("paused")) and spec.get("pauseMode") == PAUSE_FREEZE,
            stuck_grace=self._settings.stuck_grace,
            annotations=meta.get("annotations") or {},
            previous_hold=prev.get("rolloutHold"),
            rejected=self._rejected.get((meta["namespace"], meta["name"]), {}),
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
        self.writes += 1
        return updated

    # -- pods ---------------------------------------------------------------------------------

    def _forget_observed(self, pods: list[Obj]) -> None:
        """Drop remembered writes the cache now shows, so a pod can be deleted or made again at once."""
        by_name = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in pods}
        for key in list(self._recent):
            verb, ns, name = key
            pod = by_name.get((ns, name))
            meta = (pod or {}).get("metadata") or {}
            conditions = {
                c.get("type"): c.get("status") for c in (pod or {}).get("status", {}).get("conditions") or []
            }
            seen = {
                "create": pod is not None,
                "delete": pod is None or bool(meta.get("deletionTimestamp")),
                "gate-True": pod is None or conditions.get(names.SERVING_GATE) == "True",
                "gate-False": pod is None or conditions.get(names.SERVING_GATE) == "False",
            }.get(verb)
            if verb.startswith("patch-"):
                seen = pod is None or (meta.get("labels") or {}).get(names.REVISION_HASH_LABEL) == verb[6:]
            if seen:
                del self._recent[key]

    def _fresh(self, verb: str, ns: str, name: str) -> bool:
        """Whether this write was made recently (the cache has not caught up): skip it then."""
        now = time.monotonic()
        for key in [k for k, at in self._recent.items() if now - at > _RECENT]:
            del self._recent[key]
        key = (verb, ns, name)
        if key in self._recent:
            return True
        self._recent[key] = now
        return False

    async def _act(self, replica: Obj, plan: rollout_types.Plan, known: Mapping[str, RevisionData]) -> None:
        """Every pod write of the plan at once. Only a drain touches one pod twice: its delete follows
        its gate's close (and is not made when the close failed). Otherwise a create is planned only
        for a name the cache does not list, a gate opens only on a new pod and closes only on an old
        one, and an image patch waits for a pass after the close."""
        ns = replica["metadata"]["namespace"]
        held = await self._ensure_pod_groups(replica, plan, known)  # a gang's group before its pods
        closing = set(plan.close_gates)
        writes: list[tuple[tuple[str, str, str], Awaitable[None]]] = []
        writes += [(("delete", ns, n), self._drain_pod(ns, n, n in closing))
                   for n in sorted(set(plan.deletes)) if not self._fresh("delete", ns, n)]
        writes += [(("gate-False", ns, n), self._set_gate(ns, n, "False"))
                   for n in sorted(closing - set(plan.deletes))]
        writes += [((f"patch-{d}", ns, n), self._patch_images(ns, n, known[d], d))
                   for n, d in plan.image_patches if not self._fresh(f"patch-{d}", ns, n)]
        bodies = [(c, self._pod_body(replica, c, known)) for c in plan.creates if c.index not in held]
        writes += [(("create", ns, b["metadata"]["name"]), self._create_pod(replica, b, c.index))
                   for c, b in bodies if not self._fresh("create", ns, b["metadata"]["name"])]
        writes += [(("gate-True", ns, n), self._set_gate(ns, n, "True"))
                   for n in sorted(set(plan.open_gates))]
        await self._batch(writes)

    async def _batch(self, writes: list[tuple[tuple[str, str, str], Awaitable[None]]]) -> None:
        """Runs the pod writes to the end of every one. A write that failed is forgotten, so the
        work queue's retry makes it again (remembered, it was skipped as one the cache had not shown
        yet, and nothing woke the replica after); the first failure is raised after the whole batch."""
        results = await asyncio.gather(*(write for _, write in writes), return_exceptions=True)
        failures = [(key, result) for (key, _), result in zip(writes, results, strict=True)
                    if isinstance(result, BaseException)]
        for key, _ in failures:
            self._recent.pop(key, None)
        if failures:
            # Any other failure before a quota refusal: only a pass refused by quota alone is retried
            # on the quota's bounded interval rather than the error backoff.
            raise min((f for _, f in failures), key=quota_view.is_quota_refusal)

    async def _drain_pod(self, ns: str, name: str, close_first: bool) -> None:
        if close_first:
            try:
                await self._set_gate(ns, name, "False")
            except BaseException:
                self._recent.pop(("gate-False", ns, name), None)  # made again with the delete's retry
                raise
        await self._delete_pod(ns, name)

    async def _delete_pod(self, ns: str, name: str) -> None:
        with contextlib.suppress(errors.NotFound):
            await self._client.delete(PODS, name, ns)
            self.writes += 1

    async def _patch_images(self, ns: str, name: str, data: RevisionData, digest: str) -> None:
        patch = rollout_inplace.image_patch(data, digest, names.REVISION_HASH_LABEL)
        with contextlib.suppress(errors.NotFound):
            await self._client.patch(PODS, name, patch, ns, patch_type="strategic")
            self.writes += 1

    def _pod_body(
        self, replica: Obj, create: rollout_types.PodCreate, known: Mapping[str, RevisionData]
    ) -> Obj:
        data = known[create.revision_hash]
        spec = replica["spec"]
        runner = next(r for r in data.runners if r.name == create.runner)
        ident = pod_render.PodIdentity(
            names.base_name(replica),
            spec["component"],
            create.index,
            create.incarnation,
            create.runner,
            create.ordinal,
            create.revision_hash,
            desired_replicas(replica),
            spec.get("topologyKey") or None,
            tuple(coordination.peer_env_for(self._cache, replica, create.revision_hash)),
        )
        return pod_render.render_pod(replica, data, runner, ident)

    async def _create_pod(self, replica: Obj, body: Obj, index: int) -> None:
        meta = replica["metadata"]
        try:
            await self._client.create(PODS, body, meta["namespace"])
            self.writes += 1
            self._quota.get((meta["namespace"], meta["name"]), set()).discard(index)
        except errors.AlreadyExists:
            pass
        except errors.Forbidden as exc:
            if quota_view.is_quota_refusal(exc):
                # The operation waits (QuotaExceeded, its clock stopped); a quota change or the bounded
                # recheck (quota_view) tries the create again.
                self._quota.setdefault((meta["namespace"], meta["name"]), set()).add(index)
            raise
        except errors.Invalid:
            # The API server rejected the pod as invalid: the revision's own fault (InvalidPodSpec).
            self._rejected.setdefault((meta["namespace"], meta["name"]), {})[index] = "InvalidPodSpec"

    async def _gang_scheduling(self) -> bool:
        if self._gang is None:
            self._gang = await self._client.is_served(PODGROUPS)
        return self._gang

    def _ready_timeout(self, replica: Obj) -> float | None:
        """The component's lifecycle.instanceReadyTimeout, else the operator's ("0s" counts as unset)."""
        lifecycle = (replica.get("spec") or {}).get("lifecycle") or {}
        own = parse_duration(lifecycle.get("instanceReadyTimeout"))
        return own if own else (self._settings.instance_ready_timeout or None)

    async def _ensure_pod_groups(
        self, replica: Obj, plan: rollout_types.Plan, known: Mapping[str, RevisionData]
    ) -> set[int]:
        """The PodGroup of each multi-pod Instance this plan creates pods for, such as a gang surge's
        replacement at its new index (a group that exists already is kept). Returns the Instances whose
        group name a PodGroup being deleted still holds: their pods wait (`PodGroupTerminating`)."""
        gangs = {c.index: known[c.revision_hash].pod_count for c in plan.creates
                 if known[c.revision_hash].multi_pod}
        if not gangs or not await self._gang_scheduling():
            return set()
        base, component = names.base_name(replica), replica["spec"]["component"]
        timeout = schedule_timeout_seconds(self._ready_timeout(replica), self._settings.gang_schedule_timeout)
        terminating: set[int] = set()
        for index, members in sorted(gangs.items()):
            body = rollout_gang.pod_group(replica, base, component, index, members, timeout)
            outcome = await create_holds.ensure_pod_group(self._client, PODGROUPS, body)
            if outcome == create_holds.CREATED:
                self.writes += 1
            elif outcome == create_holds.TERMINATING:
                terminating.add(index)
        meta = replica["metadata"]
        key = (meta["namespace"], meta["name"])
        waits = self._group_wait.setdefault(key, set())
        waits.difference_update(set(gangs) - terminating)
        waits.update(terminating)
        if not waits:
            del self._group_wait[key]
        return terminating

    async def _drop_pod_groups(self, replica: Obj, removed: list[int]) -> None:
        """The PodGroups of rows this pass removed: a promoted surge's source, an abandoned replacement."""
        if not removed or not await self._gang_scheduling():
            return
        base, component = names.base_name(replica), replica["spec"]["component"]
        for index in sorted(set(removed)):
            with contextlib.suppress(errors.NotFound):
                await self._client.delete(PODGROUPS, names.pod_group_name(base, component, index),
                                          replica["metadata"]["namespace"])
                self.writes += 1

    async def _set_gate(self, ns: str, name: str, value: str) -> None:
        if self._fresh(f"gate-{value}", ns, name):
            return
        if await set_serving_gate(self._client, ns, name, value, self._now()):
            self.writes += 1

    # -- events and annotations -----------------------------------------------------------------

    async def _announce(self, replica: Obj, plan: rollout_types.Plan) -> None:
        if self._recorder is None or not plan.events:
            return
        target = await self._event_target(replica)
        for type_, reason, message in plan.events:
            self._recorder.event(target, "Warning" if type_ == "Warning" else "Normal", reason, message)
        key = (replica["metadata"]["namespace"], replica["metadata"]["name"])
        if any(reason == "RetryHeld" for _, reason, _ in plan.events):
            self._rejected.pop(key, None)

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
            self.writes += 1


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


def desired_replicas(replica: Mapping[str, Any]) -> int:
    spec = replica.get("spec") or {}
    value = spec.get("replicas")
    if value is None or (not spec.get("parentRef") and int(value) == 0):
        return 1
    return int(value)


def min_ready_seconds(replica: Mapping[str, Any]) -> int:
    """spec.minReadySeconds, the window in effect (lifecycle.minReadySeconds for older writers)."""
    spec = replica.get("spec") or {}
    value = spec.get("minReadySeconds")
    if value is None:
        value = (spec.get("lifecycle") or {}).get("minReadySeconds")
    return int(value or 0)


def _narrow(holds: dict[tuple[str, str], set[int]], key: tuple[str, str], keep: set[int]) -> frozenset[int]:
    """A replica's held Instances (refused by quota, waiting on a PodGroup) that still matter; a replica
    with none keeps no entry (1,000 empty sets at N=1000)."""
    held = holds.get(key)
    if held is None:
        return frozenset()
    held &= keep
    if not held:
        del holds[key]
    return frozenset(held)
