"""The Instance rollout's pod writes for the Instances it moves: creates, drains (gate closed, then
delete), serving-gate writes, in-place image patches, and a gang's PodGroups.

Every write of a plan goes out at once and runs to its end; a write made recently is skipped until the
cache shows it (`recent_writes`). A create a ResourceQuota refused, a PodGroup name still held, or a pod
the API server rejected as invalid is remembered for the planner (`rollout_holds`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any

from ome.api.resources import PODS
from ome.controllers import quota_view
from ome.controllers.inferencereplica.pod_groups import PodGroups
from ome.controllers.instancerollout.recent_writes import RecentWrites, WriteKey
from ome.controllers.instancerollout.rollout_holds import RolloutHolds
from ome.controllers.rolloutcoordination import observe as coordination
from ome.controllers.serving_gate import set_serving_gate
from ome.framework import errors
from ome.framework.cache import SharedCache
from ome.framework.client import Client
from ome.omenative import instance_names as names
from ome.omenative import pod_render, rollout_inplace, rollout_types
from ome.omenative.gang_timeout import schedule_timeout_seconds
from ome.omenative.replica_spec import desired_replicas, instance_ready_timeout
from ome.omenative.revisions import RevisionData
from ome.omenative.rollout_settings import RolloutSettings

Obj = dict[str, Any]


class RolloutPodWrites:
    def __init__(
        self,
        client: Client,
        cache: SharedCache,
        settings: RolloutSettings,
        now: Callable[[], datetime],
        recent: RecentWrites,
        holds: RolloutHolds,
        pod_groups: PodGroups,
    ) -> None:
        self._client = client
        self._cache = cache
        self._settings = settings
        self._now = now
        self._recent = recent
        self._holds = holds
        self._pod_groups = pod_groups
        self.writes = 0
        """API writes made, for the reconciler's count."""

    async def act(self, replica: Obj, plan: rollout_types.Plan, known: Mapping[str, RevisionData]) -> None:
        """Every pod write of the plan at once. Only a drain touches one pod twice: its delete follows
        its gate's close (and is not made when the close failed). Otherwise a create is planned only
        for a name the cache does not list, a gate opens only on a new pod and closes only on an old
        one, and an image patch waits for a pass after the close."""
        ns = replica["metadata"]["namespace"]
        held = await self._ensure_pod_groups(replica, plan, known)  # a gang's group before its pods
        closing = set(plan.close_gates)
        skip = self._recent.skip
        writes: list[tuple[WriteKey, Awaitable[None]]] = []
        writes += [(("delete", ns, n), self._drain_pod(ns, n, n in closing))
                   for n in sorted(set(plan.deletes)) if not skip("delete", ns, n)]
        writes += [(("gate-False", ns, n), self._set_gate(ns, n, "False"))
                   for n in sorted(closing - set(plan.deletes))]
        writes += [((f"patch-{d}", ns, n), self._patch_images(ns, n, known[d], d))
                   for n, d in plan.image_patches if not skip(f"patch-{d}", ns, n)]
        bodies = [(c, self._pod_body(replica, c, known)) for c in plan.creates if c.index not in held]
        writes += [(("create", ns, b["metadata"]["name"]), self._create_pod(replica, b, c.index))
                   for c, b in bodies if not skip("create", ns, b["metadata"]["name"])]
        writes += [(("gate-True", ns, n), self._set_gate(ns, n, "True"))
                   for n in sorted(set(plan.open_gates))]
        await self._batch(writes)

    async def drop_pod_groups(self, replica: Obj, removed: list[int]) -> None:
        """The PodGroups of rows this pass removed: a promoted surge's source, an abandoned replacement."""
        if not removed or not await self._pod_groups.gang_scheduling():
            return
        base, component = names.base_name(replica), replica["spec"]["component"]
        for index in sorted(set(removed)):
            await self._pod_groups.delete(replica["metadata"]["namespace"], base, component, index)

    async def _batch(self, writes: list[tuple[WriteKey, Awaitable[None]]]) -> None:
        """Runs the pod writes to the end of every one. A write that failed is forgotten, so the
        work queue's retry makes it again (remembered, it was skipped as one the cache had not shown
        yet, and nothing woke the replica after); the first failure is raised after the whole batch."""
        results = await asyncio.gather(*(write for _, write in writes), return_exceptions=True)
        failures = [(key, result) for (key, _), result in zip(writes, results, strict=True)
                    if isinstance(result, BaseException)]
        for key, _ in failures:
            self._recent.forget(key)
        if failures:
            # Any other failure before a quota refusal: only a pass refused by quota alone is retried
            # on the quota's bounded interval rather than the error backoff.
            raise min((f for _, f in failures), key=quota_view.is_quota_refusal)

    async def _drain_pod(self, ns: str, name: str, close_first: bool) -> None:
        if close_first:
            try:
                await self._set_gate(ns, name, "False")
            except BaseException:
                self._recent.forget(("gate-False", ns, name))  # made again with the delete's retry
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
        key = (meta["namespace"], meta["name"])
        try:
            await self._client.create(PODS, body, meta["namespace"])
            self.writes += 1
            self._holds.quota_admitted(key, index)
        except errors.AlreadyExists:
            pass
        except errors.Forbidden as exc:
            if quota_view.is_quota_refusal(exc):
                # The operation waits (QuotaExceeded, its clock stopped); a quota change or the bounded
                # recheck (quota_view) tries the create again.
                self._holds.quota_refused(key, index)
            raise
        except errors.Invalid:
            # The API server rejected the pod as invalid: the revision's own fault (InvalidPodSpec).
            self._holds.reject(key, index, "InvalidPodSpec")

    async def _ensure_pod_groups(
        self, replica: Obj, plan: rollout_types.Plan, known: Mapping[str, RevisionData]
    ) -> set[int]:
        """The PodGroup of each multi-pod Instance this plan creates pods for, such as a gang surge's
        replacement at its new index (a group that exists already is kept). Returns the Instances whose
        group name a PodGroup being deleted still holds: their pods wait (`PodGroupTerminating`)."""
        gangs = {c.index: known[c.revision_hash].pod_count for c in plan.creates
                 if known[c.revision_hash].multi_pod}
        if not gangs or not await self._pod_groups.gang_scheduling():
            return set()
        base, component = names.base_name(replica), replica["spec"]["component"]
        ready_timeout = instance_ready_timeout(replica, self._settings.instance_ready_timeout)
        timeout = schedule_timeout_seconds(ready_timeout, self._settings.gang_schedule_timeout)
        groups = self._pod_groups.ensure(replica, base, component, sorted(gangs.items()), timeout)
        terminating = {index async for index in groups}
        meta = replica["metadata"]
        self._holds.groups_waited((meta["namespace"], meta["name"]), set(gangs), terminating)
        return terminating

    async def _set_gate(self, ns: str, name: str, value: str) -> None:
        if self._recent.skip(f"gate-{value}", ns, name):
            return
        if await set_serving_gate(self._client, ns, name, value, self._now()):
            self.writes += 1
